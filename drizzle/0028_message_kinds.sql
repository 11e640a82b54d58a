-- The added kinds of message (AUDIO, STICKER, LOCATION, CONTACT, POLL, REACTION), replies and
-- mentions. `payload` holds what a kind carries beyond type, content and media ({voice},
-- {location}, {contacts}, {poll}, {reaction}); bulk jobs carry the same, copied by the fan-out.
-- Nullable columns without defaults: adding them rewrites nothing.
ALTER TABLE "messages" ADD COLUMN "payload" jsonb;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "reply_to" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "mentions" text[];--> statement-breakpoint
ALTER TABLE "bulk_jobs" ADD COLUMN "payload" jsonb;--> statement-breakpoint
ALTER TABLE "bulk_jobs" ADD COLUMN "mentions" text[];--> statement-breakpoint
ALTER TABLE "sandbox_messages" ADD COLUMN "payload" jsonb;--> statement-breakpoint
ALTER TABLE "sandbox_incoming" ADD COLUMN "payload" jsonb;
