-- The actions' walk index ends with id, the claim's tie-break after due_at, so a device's oldest
-- due actions come in claim order from the index alone (waygate_due_actions, repeatable
-- 10_message_actions.sql). Done actions are deleted, so the table is nearly empty whenever it is
-- analysed; on such statistics the planner read and sorted every due action of the device to take
-- the oldest few. The table is that small too, so the index is built again at once.
DROP INDEX IF EXISTS "message_actions_due_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "message_actions_due_idx" ON "message_actions" ("device_id", "due_at", "id") WHERE "due_at" IS NOT NULL;
