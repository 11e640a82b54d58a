-- A sandbox drop can be held: while `held`, the gateway's reconnect attempts find the phone still
-- unreachable, until the drop is ended by hand (POST /sandbox/devices/:id/restore). Tests use it
-- to keep a device DISCONNECTED for as long as they need, whatever the machine's load.
ALTER TABLE "sandbox_phones" ADD COLUMN IF NOT EXISTS "held" boolean NOT NULL DEFAULT false;
