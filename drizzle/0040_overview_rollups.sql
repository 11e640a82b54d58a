-- The overview's daily counts, kept by the statements that write a message's outcome (see
-- src/messaging/message-days.ts): how many messages of a device reached SENT, DELIVERED, READ or
-- FAILED, and how many came in, on each UTC day, so GET /account/overview sums at most a few
-- hundred rows whatever the number of messages. No foreign keys (as on messages): the rows are
-- upserted by the outcome statements, and an account delete removes them (waygate_delete_account_events).
CREATE TABLE IF NOT EXISTS "message_days" (
	"account_id" text NOT NULL,
	"day" date NOT NULL,
	"device_id" text NOT NULL,
	"sent" integer DEFAULT 0 NOT NULL,
	"delivered" integer DEFAULT 0 NOT NULL,
	"read" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"incoming" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "message_days_pkey" PRIMARY KEY ("account_id", "day", "device_id")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "message_day_failures" (
	"account_id" text NOT NULL,
	"day" date NOT NULL,
	"error_code" text NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "message_day_failures_pkey" PRIMARY KEY ("account_id", "day", "error_code")
) WITH (fillfactor = 70);
--> statement-breakpoint
-- The counts of messages already stored, so an existing install's overview starts complete:
-- each outcome on the day its timestamp falls on.
INSERT INTO "message_days" ("account_id", "day", "device_id", "sent", "delivered", "read", "failed", "incoming")
SELECT account_id, day, device_id, sum(sent)::int, sum(delivered)::int, sum(read)::int, sum(failed)::int, sum(incoming)::int FROM (
  SELECT account_id, device_id, (sent_at AT TIME ZONE 'UTC')::date AS day, 1 AS sent, 0 AS delivered, 0 AS read, 0 AS failed, 0 AS incoming FROM messages WHERE direction = 'out' AND sent_at IS NOT NULL
  UNION ALL
  SELECT account_id, device_id, (delivered_at AT TIME ZONE 'UTC')::date, 0, 1, 0, 0, 0 FROM messages WHERE direction = 'out' AND delivered_at IS NOT NULL
  UNION ALL
  SELECT account_id, device_id, (read_at AT TIME ZONE 'UTC')::date, 0, 0, 1, 0, 0 FROM messages WHERE direction = 'out' AND read_at IS NOT NULL
  UNION ALL
  SELECT account_id, device_id, (failed_at AT TIME ZONE 'UTC')::date, 0, 0, 0, 1, 0 FROM messages WHERE status = 'FAILED' AND failed_at IS NOT NULL
  UNION ALL
  SELECT account_id, device_id, (received_at AT TIME ZONE 'UTC')::date, 0, 0, 0, 0, 1 FROM messages WHERE direction = 'in' AND received_at IS NOT NULL
) AS t
GROUP BY account_id, day, device_id
ON CONFLICT DO NOTHING;
--> statement-breakpoint
INSERT INTO "message_day_failures" ("account_id", "day", "error_code", "failed")
SELECT account_id, (failed_at AT TIME ZONE 'UTC')::date, COALESCE(error_code, 'UNKNOWN'), count(*)::int
  FROM messages WHERE status = 'FAILED' AND failed_at IS NOT NULL
 GROUP BY 1, 2, 3
ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- An endpoint's health, kept by the statement that records delivery attempts
-- (src/events/webhook-store.ts recordOutcomes): failed attempts since the last success, and when
-- the last success and the last failure were.
ALTER TABLE "webhook_endpoints" ADD COLUMN IF NOT EXISTS "consecutive_failures" integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN IF NOT EXISTS "last_success_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN IF NOT EXISTS "last_failure_at" timestamp (3) with time zone;
