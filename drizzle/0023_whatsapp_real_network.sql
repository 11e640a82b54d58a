-- NETWORK=whatsapp on the real network (src/network/whatsapp). Raw-SQL tables, as in 0017.
--
-- A session that stopped retrying (a refused account, an outdated client, unscanned QR codes)
-- stays stopped for whichever worker holds the device next, until the device is reconnected;
-- and bulk traffic paused after a 463 stays paused across a takeover.
ALTER TABLE "whatsapp_devices" ADD COLUMN IF NOT EXISTS "stopped_code" text;
--> statement-breakpoint
ALTER TABLE "whatsapp_devices" ADD COLUMN IF NOT EXISTS "stopped_message" text;
--> statement-breakpoint
ALTER TABLE "whatsapp_devices" ADD COLUMN IF NOT EXISTS "stopped_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "whatsapp_devices" ADD COLUMN IF NOT EXISTS "bulk_paused_until" timestamp (3) with time zone;
--> statement-breakpoint
-- What each sent message was on the wire (proto.Message, with the uploaded media's keys), so a
-- recipient's retry request is answered for every kind; kept 14 days.
CREATE TABLE IF NOT EXISTS "whatsapp_sent_messages" (
	"device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"message_id" text NOT NULL,
	"content" bytea NOT NULL,
	"sent_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "message_id")
);
--> statement-breakpoint
-- onWhatsApp answers per device and number (jid NULL: not on WhatsApp), so a restart or a
-- takeover does not ask again (bulk look-ups are a ban signal).
CREATE TABLE IF NOT EXISTS "whatsapp_numbers" (
	"device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"phone_number" text NOT NULL,
	"jid" text,
	"checked_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "phone_number")
);
--> statement-breakpoint
-- The sender's WhatsApp LID of an incoming message (<digits>@lid), beside its number in peer:
-- shown as `fromLid` on messages and in message.received.
ALTER TABLE "messages" ADD COLUMN IF NOT EXISTS "peer_lid" text;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_message_json(m messages) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', m.id, 'direction', m.direction, 'deviceId', m.device_id, 'jobId', m.job_id,
    'to', CASE WHEN m.direction = 'out' THEN m.peer END, 'from', CASE WHEN m.direction = 'in' THEN m.peer END,
    'fromLid', m.peer_lid,
    'type', m.type, 'content', m.content, 'mediaUrl', m.media_url, 'status', m.status, 'attempts', m.attempts,
    'error', CASE WHEN m.error_code IS NULL THEN NULL ELSE jsonb_build_object('code', m.error_code, 'message', COALESCE(m.error_message, '')) END,
    'scheduledAt', waygate_ts(m.scheduled_at), 'createdAt', waygate_ts(m.created_at), 'queuedAt', waygate_ts(m.queued_at),
    'sentAt', waygate_ts(m.sent_at), 'deliveredAt', waygate_ts(m.delivered_at), 'readAt', waygate_ts(m.read_at),
    'failedAt', waygate_ts(m.failed_at), 'cancelledAt', waygate_ts(m.cancelled_at), 'receivedAt', waygate_ts(m.received_at),
    'media', m.media)
$$;
