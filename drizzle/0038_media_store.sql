-- The media store: the files of incoming media messages, in the database so every node of a
-- cluster serves them (GET /messages/:id/media). One `media` row per message and its bytes in
-- `media_chunks`, 256 KiB each (see src/media/media-store.ts): a file is written and read a chunk
-- per statement, so no statement and no process holds a whole 100 MB document, and a Range
-- request reads only the chunks it covers. A row is visible once `stored_at` is set, in the
-- statement that stores its message; rows never finished (a crash mid-download) are pruned.
CREATE TABLE IF NOT EXISTS "media" (
  "message_id" text PRIMARY KEY NOT NULL,
  "account_id" text NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "content_type" text NOT NULL,
  "file_name" text,
  "size_bytes" bigint NOT NULL DEFAULT 0,
  "sha256" text,
  "chunk_size" integer NOT NULL,
  "created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
  "stored_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "media_created_idx" ON "media" USING btree ("created_at");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "media_account_idx" ON "media" USING btree ("account_id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "media_chunks" (
  "message_id" text NOT NULL REFERENCES "media"("message_id") ON DELETE CASCADE,
  "n" integer NOT NULL,
  "data" bytea NOT NULL,
  CONSTRAINT "media_chunks_pk" PRIMARY KEY ("message_id", "n")
);
--> statement-breakpoint
-- Media is compressed already (JPEG, MP4, Opus, WebP...): stored as it is, not compressed again.
ALTER TABLE "media_chunks" ALTER COLUMN "data" SET STORAGE EXTERNAL;
