-- The sandbox's groups keep who was made an admin besides their creator (the first member),
-- for POST /chats/:chatId/participants {action: "promote" | "demote"}, and how often their invite
-- code was revoked (POST /chats/:chatId/invite/revoke): the code is derived from the group and
-- this count.
ALTER TABLE "sandbox_groups" ADD COLUMN IF NOT EXISTS "admins" text[] COLLATE "C" NOT NULL DEFAULT '{}';
--> statement-breakpoint
ALTER TABLE "sandbox_groups" ADD COLUMN IF NOT EXISTS "invite_version" integer NOT NULL DEFAULT 0;
