-- A chat row is written for each new peer a send or a received message meets: a 100,000-recipient
-- job inserts 100,000 of them, and each paid two foreign-key checks (about 5.5 µs a row, and a
-- KEY SHARE lock on the account's row, which every event write updates). Every insert takes its
-- device and account from a devices row in the same statement; an account's chats are removed by
-- the account-delete trigger (drizzle/repeatable/20_account_delete.sql), as its messages are.
ALTER TABLE "chats" DROP CONSTRAINT IF EXISTS "chats_account_id_fkey";
--> statement-breakpoint
ALTER TABLE "chats" DROP CONSTRAINT IF EXISTS "chats_device_id_fkey";
