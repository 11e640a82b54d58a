-- A plan bounds the bytes its account's uploads (POST /media) hold at once; NULL = unlimited.
-- free holds one largest upload (100 MB), pro 1 GB, yearly 2 GB.
ALTER TABLE "plans" ADD COLUMN IF NOT EXISTS "max_upload_bytes" bigint;
--> statement-breakpoint
UPDATE "plans" SET "max_upload_bytes" = v.bytes
  FROM (VALUES ('free', 104857600), ('pro', 1073741824), ('yearly', 2147483648)) AS v(id, bytes)
 WHERE "plans"."id" = v.id AND "plans"."max_upload_bytes" IS NULL;
--> statement-breakpoint
-- An account's uploads among its media (incoming files are many more): what they hold, and their
-- listing, newest first. The predicate is UPLOAD_ID_PATTERN of src/media/upload-url.ts, which the
-- statements write as a constant so that the planner can match it.
CREATE INDEX IF NOT EXISTS "media_uploads_idx" ON "media" ("account_id", "created_at" DESC, "message_id" DESC)
  WHERE "message_id" ~ '^upl_[0-9a-z]{26}$' AND "stored_at" IS NOT NULL;
