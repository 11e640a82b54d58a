-- The delivery queue, per endpoint, split into first attempts and retries, so a claim takes from
-- both in turn: a fresh event never waits behind an endpoint's whole backlog of retries.
CREATE INDEX IF NOT EXISTS "webhook_deliveries_fresh_idx" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'PENDING' AND "attempts" = 0;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_deliveries_retry_idx" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'PENDING' AND "attempts" > 0;
--> statement-breakpoint
DROP INDEX IF EXISTS "webhook_deliveries_due_idx";
--> statement-breakpoint
-- Test events (webhook.test) stand outside the account's sequence: they go to one endpoint, so a
-- seq of the account's would leave every other endpoint a hole that means "missed deliveries".
ALTER TABLE "events" ALTER COLUMN "seq" DROP NOT NULL;
