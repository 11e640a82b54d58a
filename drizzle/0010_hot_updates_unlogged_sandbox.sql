-- A message is written five times (accepted, claimed, sent, delivered, read). Only the claim
-- needs to touch the queue index; the other transitions change columns that no index holds, so
-- PostgreSQL can update them in place (HOT) if the page has room: keep 30% of each page free.
UPDATE "messages" SET "due_at" = NULL WHERE "status" NOT IN ('QUEUED', 'SCHEDULED');
--> statement-breakpoint
DROP INDEX IF EXISTS "messages_due_idx";
--> statement-breakpoint
DROP INDEX IF EXISTS "messages_sending_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "messages_queue_idx" ON "messages" ("device_id", "priority", "due_at", "id") WHERE "due_at" IS NOT NULL;
--> statement-breakpoint
ALTER TABLE "messages" SET (fillfactor = 70);
--> statement-breakpoint
-- What the sandbox network received is a simulation's record, not business data, and it takes
-- three writes per message: it is not WAL-logged (PostgreSQL empties it if the server itself
-- crashes; a crash of a Waygate process loses nothing). Linked phones and incoming messages stay
-- logged.
ALTER TABLE "sandbox_messages" SET UNLOGGED;
