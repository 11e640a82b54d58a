-- The dispatch queue: a device owner claims its due messages, direct sends (priority 0) before
-- bulk, oldest first. Partial, so the index holds only waiting messages and stays small.
CREATE INDEX IF NOT EXISTS "messages_due_idx" ON "messages" ("device_id", "priority", "due_at", "id")
  WHERE "status" IN ('QUEUED', 'SCHEDULED');
--> statement-breakpoint
-- Work left in SENDING by a worker that died, found when another worker takes the device over.
CREATE INDEX IF NOT EXISTS "messages_sending_idx" ON "messages" ("device_id") WHERE "status" = 'SENDING';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_messages_deliver_due_idx" ON "sandbox_messages" ("device_id", "deliver_at")
  WHERE "delivered" = 0 AND "deliver_at" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_messages_read_due_idx" ON "sandbox_messages" ("device_id", "read_at")
  WHERE "read" = 0 AND "read_at" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "bulk_jobs_fanout_idx" ON "bulk_jobs" ("created_at") WHERE "fanned_out_at" IS NULL;
