-- Identifiers compare as bytes: every identifier column (id, *_id, and the ids named otherwise:
-- peer, lid, peer_lid, reply_to) is text COLLATE "C". They are ASCII (ULIDs, phone numbers,
-- WhatsApp ids), so byte order is their order in every locale; in the database's own collation
-- each comparison of a B-tree descent or a sort goes through strcoll instead (C.UTF-8 or
-- en_US.UTF-8 on most servers), and a send writes some twenty index entries keyed on them.
-- Changing a column's collation keeps the table (the type is the same) and rebuilds the indexes
-- that hold the column; one statement a table, so each index is rebuilt once.
-- test/schema-rules.test.ts keeps the rule for the columns later migrations add.
ALTER TABLE "accounts" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "plan_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "api_tokens" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "bulk_jobs" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "chats" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "lid" SET DATA TYPE text COLLATE "C", ALTER COLUMN "last_message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "contact_search_grams" ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "contacts" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "dashboard_sessions" ALTER COLUMN "user_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "device_pairing_codes" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "request_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "device_requests" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "devices" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "group_members" ALTER COLUMN "group_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "contact_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "groups" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "media" ALTER COLUMN "message_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "media_chunks" ALTER COLUMN "message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "message_actions" ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "message_day_failures" ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "message_days" ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "message_queue" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "job_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "peer" SET DATA TYPE text COLLATE "C", ALTER COLUMN "network_message_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "peer_lid" SET DATA TYPE text COLLATE "C", ALTER COLUMN "reply_to" SET DATA TYPE text COLLATE "C", ALTER COLUMN "chat_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "number_checks" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "chat_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "plans" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_groups" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_incoming" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "network_message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_messages" ALTER COLUMN "network_message_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_phones" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_presence" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_qr_codes" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sandbox_reads" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "network_message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "usage_periods" ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "users" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "webhook_attempts" ALTER COLUMN "delivery_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "endpoint_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "event_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "account_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "whatsapp_auth" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "key_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "whatsapp_devices" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "whatsapp_lids" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "lid" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "whatsapp_numbers" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "whatsapp_polls" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "whatsapp_sent_messages" ALTER COLUMN "device_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "message_id" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "workers" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C";
