-- Edits, deletes for everyone and read receipts (DESIGN.md §9). The record shows an edit or a
-- delete at once (editedAt, deletedAt); the network learns of it through message_actions, a
-- queue the worker holding the device works through like the messages queue (due_at set while
-- the action waits; NULL once done or given up). Nullable columns without defaults: adding them
-- rewrites nothing.
ALTER TABLE "messages" ADD COLUMN "edited_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "deleted_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE TABLE "message_actions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"message_id" text NOT NULL,
	"action" text NOT NULL,
	"content" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"due_at" timestamp (3) with time zone DEFAULT now(),
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"error_code" text,
	"error_message" text
);--> statement-breakpoint
CREATE INDEX "message_actions_due_idx" ON "message_actions" ("device_id", "due_at") WHERE "due_at" IS NOT NULL;--> statement-breakpoint
-- A WhatsApp poll's message secret (its votes are encrypted with it) and options (votes name
-- them by their SHA-256), kept as long as the device, so votes that come days later, or after a
-- restart or a takeover, are still read. Raw SQL, as the other whatsapp_* tables.
CREATE TABLE IF NOT EXISTS "whatsapp_polls" (
	"device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"message_id" text NOT NULL,
	"secret" bytea NOT NULL,
	"options" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "message_id")
);--> statement-breakpoint
-- What the sandbox network did with a message after it took it: edited (content is the latest
-- text) or deleted for everyone by the sender; and incoming messages the device marked read.
ALTER TABLE "sandbox_messages" ADD COLUMN "edited_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "sandbox_messages" ADD COLUMN "deleted_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE UNLOGGED TABLE "sandbox_reads" (
	"device_id" text NOT NULL,
	"network_message_id" text NOT NULL,
	"read_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "network_message_id")
);
