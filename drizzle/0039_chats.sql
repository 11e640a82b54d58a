-- Conversations (DESIGN.md section 10). A message's chat is its group (`chat_id`, '<digits>@g.us')
-- in a group chat, else its peer: only group messages from another member set chat_id, so the
-- insert paths of direct sends and bulk fan-out are unchanged. A chat's history walks this index.
ALTER TABLE "messages" ADD COLUMN IF NOT EXISTS "chat_id" text;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "messages_chat_idx" ON "messages" ("device_id", (COALESCE("chat_id", "peer")), "created_at" DESC, "id" DESC);
--> statement-breakpoint
-- One row per conversation of a device: kept by the incoming path (same statement as the
-- message), by outgoing traffic in batches after the outcome, and by the network's group lists.
CREATE TABLE IF NOT EXISTS "chats" (
  "device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
  "id" text NOT NULL,
  "account_id" text NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
  "type" text NOT NULL,
  "name" text,
  "phone_number" text,
  "lid" text,
  "last_message_id" text,
  "last_activity_at" timestamp(3) with time zone NOT NULL DEFAULT now(),
  "unread_count" integer NOT NULL DEFAULT 0,
  "participants" jsonb,
  "created_at" timestamp(3) with time zone NOT NULL DEFAULT now(),
  PRIMARY KEY ("device_id", "id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "chats_account_activity_idx" ON "chats" ("account_id", "last_activity_at" DESC, "device_id" DESC, "id" DESC);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "chats_device_activity_idx" ON "chats" ("device_id", "last_activity_at" DESC, "id" DESC);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "chats_lid_idx" ON "chats" ("device_id", "lid") WHERE "lid" IS NOT NULL;
--> statement-breakpoint
-- POST /numbers/check answers, per device, kept 7 days.
CREATE TABLE IF NOT EXISTS "number_checks" (
  "device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
  "phone_number" text NOT NULL,
  "on_network" boolean NOT NULL,
  "chat_id" text,
  "checked_at" timestamp(3) with time zone NOT NULL DEFAULT now(),
  PRIMARY KEY ("device_id", "phone_number")
);
--> statement-breakpoint
-- What the API asks of the worker holding a device's session (number look-ups, read receipts,
-- presence): written here, announced on the bus, answered (or done) by that worker.
CREATE TABLE IF NOT EXISTS "device_requests" (
  "id" text PRIMARY KEY,
  "device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
  "kind" text NOT NULL,
  "payload" jsonb NOT NULL,
  "answer" jsonb,
  "error" text,
  "created_at" timestamp(3) with time zone NOT NULL DEFAULT now(),
  "answered_at" timestamp(3) with time zone
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "device_requests_open_idx" ON "device_requests" ("device_id", "created_at") WHERE "answered_at" IS NULL;
--> statement-breakpoint
-- The sandbox network's WhatsApp groups (POST /sandbox/groups) and their members.
CREATE TABLE IF NOT EXISTS "sandbox_groups" (
  "id" text PRIMARY KEY,
  "device_id" text NOT NULL,
  "account_id" text NOT NULL,
  "name" text NOT NULL,
  "members" text[] NOT NULL,
  "created_at" timestamp(3) with time zone NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "sandbox_groups_device_idx" ON "sandbox_groups" ("device_id");
