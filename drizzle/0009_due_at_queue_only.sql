ALTER TABLE "messages" ALTER COLUMN "due_at" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "due_at" DROP NOT NULL;