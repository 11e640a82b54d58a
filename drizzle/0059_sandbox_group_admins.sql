-- The sandbox's groups keep who was made an admin besides their creator (the first member),
-- for POST /chats/:chatId/participants {action: "promote" | "demote"}.
ALTER TABLE "sandbox_groups" ADD COLUMN IF NOT EXISTS "admins" text[] COLLATE "C" NOT NULL DEFAULT '{}';
