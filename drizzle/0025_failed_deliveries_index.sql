-- The delivery log filtered to FAILED, newest first (what a user looks for in it), is read along
-- this index, which holds failed deliveries only: without it, a log of a million successes with
-- a few failures was read whole to find them (and to count them). A delivery that succeeds never
-- writes to it; a status change already rewrites every index entry of the row (status is in the
-- predicate of webhook_deliveries_due_idx, so no such update is HOT), so failing adds one entry.
CREATE INDEX IF NOT EXISTS "webhook_deliveries_failed_idx" ON "webhook_deliveries" ("endpoint_id", "created_at" DESC NULLS LAST, "id" DESC NULLS LAST) WHERE "status" = 'FAILED';
