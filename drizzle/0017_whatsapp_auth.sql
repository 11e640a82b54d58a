-- Custom SQL migration file, put your code below! --
-- NETWORK=whatsapp (src/network/whatsapp). Hand-written and read with raw SQL only, so these
-- tables are not in src/db/schema.ts.
--
-- Baileys auth state of each device, in the database rather than in files, so that whichever
-- worker holds a device's lease can restore its session. category 'creds' (key_id '') holds the
-- credentials; the other categories are Baileys' signal key types (pre-key, session, sender-key,
-- app-state-sync-key, ...). value is JSON written with Baileys' BufferJSON (buffers as base64).
CREATE TABLE "whatsapp_auth" (
	"device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"category" text NOT NULL,
	"key_id" text NOT NULL,
	"value" text NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "category", "key_id")
);
--> statement-breakpoint
-- Per device: when it was first linked (warm-up), the bulk messages handed over in the current
-- warm-up day (a day is 24 h counted from first_linked_at), and the LID → phone number pairs the
-- network told us about (senders addressed as <digits>@lid).
CREATE TABLE "whatsapp_devices" (
	"device_id" text PRIMARY KEY NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"phone_number" text,
	"first_linked_at" timestamp (3) with time zone,
	"warmup_day" integer DEFAULT 0 NOT NULL,
	"warmup_sent" integer DEFAULT 0 NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "whatsapp_lids" (
	"device_id" text NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"lid" text NOT NULL,
	"phone_number" text NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("device_id", "lid")
);
--> statement-breakpoint
-- Pairing-code requests (the alternative to scanning a QR code): the API writes the phone
-- number and waits; the worker holding the device's session asks the network for the code and
-- writes it (or the error) back. One row per device, replaced by each new request.
CREATE TABLE "device_pairing_codes" (
	"device_id" text PRIMARY KEY NOT NULL REFERENCES "devices"("id") ON DELETE CASCADE,
	"request_id" text NOT NULL,
	"phone_number" text NOT NULL,
	"code" text,
	"error" text,
	"expires_at" timestamp (3) with time zone,
	"requested_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
