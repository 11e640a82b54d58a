-- Trigram search over "lower(name) \x01 phone digits": one GIN index answers a case-insensitive
-- substring search of either field. The \x01 separator cannot be typed into a search, so a match
-- never spans the two fields. Queries must use exactly this expression to hit the index.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "contacts_search_trgm_idx" ON "contacts" USING gin ((lower("name") || chr(1) || "phone_number") gin_trgm_ops);
--> statement-breakpoint
-- Exact counters kept by statement-level triggers (one UPDATE per statement, not per row, so a
-- 100,000-row import costs one counter write).
CREATE OR REPLACE FUNCTION waygate_contacts_count_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts a SET contacts_count = a.contacts_count + n.c
  FROM (SELECT account_id, count(*)::int AS c FROM new_rows GROUP BY account_id) n
  WHERE a.id = n.account_id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_contacts_count_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts a SET contacts_count = a.contacts_count - o.c
  FROM (SELECT account_id, count(*)::int AS c FROM old_rows GROUP BY account_id) o
  WHERE a.id = o.account_id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER contacts_count_insert AFTER INSERT ON contacts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_contacts_count_add();
--> statement-breakpoint
CREATE TRIGGER contacts_count_delete AFTER DELETE ON contacts
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_contacts_count_remove();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_group_members_count_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE groups g SET contacts_count = g.contacts_count + n.c
  FROM (SELECT group_id, count(*)::int AS c FROM new_rows GROUP BY group_id) n
  WHERE g.id = n.group_id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_group_members_count_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE groups g SET contacts_count = g.contacts_count - o.c
  FROM (SELECT group_id, count(*)::int AS c FROM old_rows GROUP BY group_id) o
  WHERE g.id = o.group_id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER group_members_count_insert AFTER INSERT ON group_members
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_group_members_count_add();
--> statement-breakpoint
CREATE TRIGGER group_members_count_delete AFTER DELETE ON group_members
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_group_members_count_remove();
--> statement-breakpoint
-- Plans are rows, not code. Quotas: messages per period (NULL = unlimited).
INSERT INTO plans (id, name, message_quota, period, max_devices, max_webhooks) VALUES
  ('free', 'Free', 50, 'month', 1, 1),
  ('pro', 'Pro', 1000, 'month', 1, 1),
  ('yearly', 'Yearly', 12000, 'year', 1, 2),
  ('unlimited', 'Unlimited', NULL, 'month', NULL, NULL)
ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, message_quota = EXCLUDED.message_quota,
  period = EXCLUDED.period, max_devices = EXCLUDED.max_devices, max_webhooks = EXCLUDED.max_webhooks;
