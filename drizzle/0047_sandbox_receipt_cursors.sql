-- The sandbox network hands receipts over from per-device cursors kept by the process that runs
-- the device's session (src/network/sandbox/world.ts, dueReceipts): a look reads the index past
-- the cursor, by (time, network message id), and stops short of the receipt times of accepts
-- still in flight, so nothing commits behind a cursor and nothing handed over is flagged. A
-- message row is written once, when it is accepted; the stored marks only tell a session that
-- starts where to read from.
DROP INDEX IF EXISTS "sandbox_messages_deliver_time_idx";
--> statement-breakpoint
DROP INDEX IF EXISTS "sandbox_messages_read_time_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_messages_deliver_cursor_idx" ON "sandbox_messages" ("device_id", "deliver_at", "network_message_id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_messages_read_cursor_idx" ON "sandbox_messages" ("device_id", "read_at", "network_message_id");
--> statement-breakpoint
ALTER TABLE "sandbox_messages" DROP COLUMN IF EXISTS "delivered";
--> statement-breakpoint
ALTER TABLE "sandbox_messages" DROP COLUMN IF EXISTS "read";
--> statement-breakpoint
ALTER TABLE "sandbox_messages" DROP COLUMN IF EXISTS "delivered_at";
--> statement-breakpoint
ALTER TABLE "sandbox_messages" DROP COLUMN IF EXISTS "read_receipt_at";
--> statement-breakpoint
ALTER TABLE "sandbox_messages" SET (fillfactor = 100);
