-- Only a bulk job's messages have a job_id, and every statement that reads messages by job asks
-- for one job (job_id = …), which the partial index answers. A direct send's message no longer
-- adds a NULL entry to it on its insert and on each update that cannot stay on its page.
CREATE INDEX IF NOT EXISTS "messages_job_partial_idx" ON "messages" ("job_id") WHERE "job_id" IS NOT NULL;
--> statement-breakpoint
DROP INDEX IF EXISTS "messages_job_idx";
--> statement-breakpoint
ALTER INDEX "messages_job_partial_idx" RENAME TO "messages_job_idx";
