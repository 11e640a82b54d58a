CREATE TABLE "bulk_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"status" text NOT NULL,
	"type" text NOT NULL,
	"content" text NOT NULL,
	"media_url" text,
	"recipients" text[],
	"group_ids" text[],
	"total_contacts" integer NOT NULL,
	"sent_count" integer DEFAULT 0 NOT NULL,
	"failed_count" integer DEFAULT 0 NOT NULL,
	"delivered_count" integer DEFAULT 0 NOT NULL,
	"read_count" integer DEFAULT 0 NOT NULL,
	"cancelled_count" integer DEFAULT 0 NOT NULL,
	"quota_period_start" timestamp (3) with time zone,
	"scheduled_at" timestamp (3) with time zone,
	"fanout_offset" integer DEFAULT 0 NOT NULL,
	"fanned_out_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp (3) with time zone,
	"cancelled_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "devices" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"phone_number" text,
	"qr_code" text,
	"qr_expires_at" timestamp (3) with time zone,
	"last_error" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"connected_at" timestamp (3) with time zone,
	"disconnected_at" timestamp (3) with time zone,
	"logged_out_at" timestamp (3) with time zone,
	"removed_at" timestamp (3) with time zone,
	"lease_owner" text,
	"lease_expires_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"account_id" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"status_code" integer,
	"response" jsonb,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_account_id_key_pk" PRIMARY KEY("account_id","key")
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"job_id" text,
	"direction" text DEFAULT 'out' NOT NULL,
	"peer" text NOT NULL,
	"type" text NOT NULL,
	"content" text NOT NULL,
	"media_url" text,
	"status" text NOT NULL,
	"priority" smallint DEFAULT 0 NOT NULL,
	"due_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"network_message_id" text NOT NULL,
	"claimed_by" text,
	"error_code" text,
	"error_message" text,
	"quota_period_start" timestamp (3) with time zone,
	"scheduled_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"queued_at" timestamp (3) with time zone,
	"sent_at" timestamp (3) with time zone,
	"delivered_at" timestamp (3) with time zone,
	"read_at" timestamp (3) with time zone,
	"failed_at" timestamp (3) with time zone,
	"cancelled_at" timestamp (3) with time zone,
	"received_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "sandbox_incoming" (
	"seq" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sandbox_incoming_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"device_id" text NOT NULL,
	"network_message_id" text NOT NULL,
	"from" text NOT NULL,
	"type" text NOT NULL,
	"content" text NOT NULL,
	"media_url" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sandbox_messages" (
	"network_message_id" text NOT NULL,
	"device_id" text NOT NULL,
	"account_id" text NOT NULL,
	"to" text NOT NULL,
	"type" text NOT NULL,
	"content" text NOT NULL,
	"media_bytes" integer,
	"media_type" text,
	"file_name" text,
	"send_calls" integer DEFAULT 1 NOT NULL,
	"delivered" smallint DEFAULT 0 NOT NULL,
	"read" smallint DEFAULT 0 NOT NULL,
	"accepted_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deliver_at" timestamp (3) with time zone,
	"read_at" timestamp (3) with time zone,
	"delivered_at" timestamp (3) with time zone,
	"read_receipt_at" timestamp (3) with time zone,
	CONSTRAINT "sandbox_messages_device_id_network_message_id_pk" PRIMARY KEY("device_id","network_message_id")
);
--> statement-breakpoint
CREATE TABLE "sandbox_phones" (
	"device_id" text PRIMARY KEY NOT NULL,
	"phone_number" text NOT NULL,
	"state" text NOT NULL,
	"changed_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"version" integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sandbox_qr_codes" (
	"code" text PRIMARY KEY NOT NULL,
	"device_id" text NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"scanned_phone" text
);
--> statement-breakpoint
ALTER TABLE "bulk_jobs" ADD CONSTRAINT "bulk_jobs_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "bulk_jobs" ADD CONSTRAINT "bulk_jobs_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_job_id_bulk_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."bulk_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "bulk_jobs_account_idx" ON "bulk_jobs" USING btree ("account_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "devices_account_idx" ON "devices" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "devices_lease_idx" ON "devices" USING btree ("lease_expires_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "messages_account_created_idx" ON "messages" USING btree ("account_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "messages_job_idx" ON "messages" USING btree ("job_id");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_network_id_key" ON "messages" USING btree ("device_id","network_message_id");--> statement-breakpoint
CREATE INDEX "sandbox_messages_account_idx" ON "sandbox_messages" USING btree ("account_id","to");--> statement-breakpoint
CREATE INDEX "sandbox_messages_deliver_idx" ON "sandbox_messages" USING btree ("device_id","deliver_at");