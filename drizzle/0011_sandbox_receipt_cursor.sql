-- Receipts of the sandbox network without rewriting index entries: a message's receipt times
-- are set when it is accepted and indexed once (device, time); handing a receipt over only flips
-- an unindexed flag (a HOT update). Each linked phone keeps a low-water mark per receipt kind
-- below which every receipt has been handed over, so the poll reads only the recent part of the
-- index. "delivered"/"read" as the API shows them follow from the times (the phone has the
-- message once its time has come); the flags only say what was handed to Waygate.
DROP INDEX IF EXISTS "sandbox_messages_deliver_due_idx";
--> statement-breakpoint
DROP INDEX IF EXISTS "sandbox_messages_read_due_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_messages_deliver_time_idx" ON "sandbox_messages" ("device_id", "deliver_at");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_messages_read_time_idx" ON "sandbox_messages" ("device_id", "read_at");
--> statement-breakpoint
ALTER TABLE "sandbox_messages" SET (fillfactor = 80);
--> statement-breakpoint
ALTER TABLE "sandbox_phones" ADD COLUMN IF NOT EXISTS "delivered_mark" timestamptz;
--> statement-breakpoint
ALTER TABLE "sandbox_phones" ADD COLUMN IF NOT EXISTS "read_mark" timestamptz;
