-- A plan bounds the bytes its account's uploads (POST /media) hold at once; NULL = unlimited.
-- free holds one largest upload (100 MB), pro 1 GB, yearly 2 GB.
ALTER TABLE "plans" ADD COLUMN IF NOT EXISTS "max_upload_bytes" bigint;
--> statement-breakpoint
UPDATE "plans" SET "max_upload_bytes" = v.bytes
  FROM (VALUES ('free', 104857600), ('pro', 1073741824), ('yearly', 2147483648)) AS v(id, bytes)
 WHERE "plans"."id" = v.id AND "plans"."max_upload_bytes" IS NULL;
