-- GET /messages?jobId= lists one job's messages newest first: with the index in that order
-- ((job_id, created_at DESC, id DESC)) a page reads one page of entries, where the index on the
-- job alone read and sorted every message of the job. The entries are as many as before.
CREATE INDEX IF NOT EXISTS "messages_job_ordered_idx" ON "messages" ("job_id", "created_at" DESC, "id" DESC) WHERE "job_id" IS NOT NULL;
--> statement-breakpoint
DROP INDEX IF EXISTS "messages_job_idx";
--> statement-breakpoint
ALTER INDEX "messages_job_ordered_idx" RENAME TO "messages_job_idx";
