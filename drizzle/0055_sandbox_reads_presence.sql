-- What the sandbox network saw of a device's reading and presence, for GET /sandbox/reads and
-- GET /sandbox/presence: the chat of each read receipt, and the last presence shown in each chat.
ALTER TABLE "sandbox_reads" ADD COLUMN IF NOT EXISTS "chat" text;
--> statement-breakpoint
CREATE UNLOGGED TABLE IF NOT EXISTS "sandbox_presence" (
	"device_id" text NOT NULL,
	"chat" text NOT NULL,
	"state" text NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "chat")
);
