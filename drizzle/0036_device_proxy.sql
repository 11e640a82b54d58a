-- A device's own proxy (http, https, socks5 or socks5h URL, credentials included): the WhatsApp
-- network connects and downloads media through it. The API shows it with the password masked.
ALTER TABLE "devices" ADD COLUMN IF NOT EXISTS "proxy_url" text;
