-- The chat of each read receipt the sandbox network saw (GET /sandbox/reads lists them).
ALTER TABLE "sandbox_reads" ADD COLUMN IF NOT EXISTS "chat" text;
