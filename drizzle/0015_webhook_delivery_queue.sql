-- The delivery queue, per endpoint (so the worker can take a few of each endpoint's due
-- deliveries, and one slow endpoint never holds back the others). Only waiting rows are in it.
CREATE INDEX IF NOT EXISTS "webhook_deliveries_due_idx" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'PENDING';
--> statement-breakpoint
-- Events are found by (account, seq); their age only matters for the 30-day retention sweep,
-- which a BRIN index serves at almost no write cost (events arrive in time order).
CREATE INDEX IF NOT EXISTS "events_created_brin_idx" ON "events" USING brin ("created_at");
