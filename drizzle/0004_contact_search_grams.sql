-- Exact totals for short contact searches. A search matches a substring of the search text
-- "lower(name) \x01 phone digits" (the expression of contacts_search_trgm_idx); counting the matches
-- of a common fragment through the trigram index means rechecking every matching row (38,000 rows,
-- ~80 ms, for "man" among a million contacts). contact_search_grams keeps, per account, how many
-- contacts have each 1-, 2- and 3-character substring in their search text, so a search of at most
-- three characters (as a user starts typing) reads its exact meta.total from one row.
--
-- Kept exact by statement-level triggers on contacts, like accounts.contacts_count. Every writer
-- first holds the account row (the counter trigger locks it on insert and delete; the update
-- trigger locks it explicitly), so writers of one account's grams queue instead of deadlocking.
-- A gram whose count drops to zero is deleted; an absent gram means no contact has it.
CREATE TABLE IF NOT EXISTS "contact_search_grams" (
	"account_id" text NOT NULL REFERENCES "accounts"("id") ON DELETE CASCADE,
	"gram" text NOT NULL,
	"contacts" integer NOT NULL,
	PRIMARY KEY ("account_id", "gram")
);
--> statement-breakpoint
-- The distinct substrings of 1 to 3 characters of one search text.
CREATE OR REPLACE FUNCTION waygate_search_grams(doc text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT DISTINCT substr(doc, p, l)
    FROM generate_series(1, 3) AS l, generate_series(1, char_length(doc) - l + 1) AS p
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_contact_grams_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO contact_search_grams AS g (account_id, gram, contacts)
  SELECT n.account_id, x.gram, count(*)::int
    FROM new_rows n CROSS JOIN LATERAL waygate_search_grams(lower(n.name) || chr(1) || n.phone_number) AS x(gram)
   GROUP BY n.account_id, x.gram
   ORDER BY n.account_id, x.gram
  ON CONFLICT (account_id, gram) DO UPDATE SET contacts = g.contacts + EXCLUDED.contacts;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Applies per-gram deltas. Positive ones upsert; negative ones only update existing rows (never
-- insert: while an account is deleted its gram rows may already be gone), and grams that reach
-- zero are deleted.
CREATE OR REPLACE FUNCTION waygate_contact_grams_apply(account_ids text[], grams text[], deltas integer[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  emptied_accounts text[];
  emptied_grams text[];
BEGIN
  INSERT INTO contact_search_grams AS g (account_id, gram, contacts)
  SELECT d.account_id, d.gram, d.delta
    FROM unnest(account_ids, grams, deltas) AS d(account_id, gram, delta)
   WHERE d.delta > 0
   ORDER BY d.account_id, d.gram
  ON CONFLICT (account_id, gram) DO UPDATE SET contacts = g.contacts + EXCLUDED.contacts;

  WITH changed AS (
    UPDATE contact_search_grams AS g SET contacts = g.contacts + d.delta
      FROM unnest(account_ids, grams, deltas) AS d(account_id, gram, delta)
     WHERE d.delta < 0 AND g.account_id = d.account_id AND g.gram = d.gram
    RETURNING g.account_id, g.gram, g.contacts
  )
  SELECT array_agg(account_id), array_agg(gram) INTO emptied_accounts, emptied_grams FROM changed WHERE contacts <= 0;
  IF emptied_grams IS NOT NULL THEN
    DELETE FROM contact_search_grams AS g
     USING unnest(emptied_accounts, emptied_grams) AS e(account_id, gram)
     WHERE g.account_id = e.account_id AND g.gram = e.gram AND g.contacts <= 0;
  END IF;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_contact_grams_remove() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  account_ids text[];
  grams text[];
  deltas integer[];
BEGIN
  SELECT array_agg(account_id), array_agg(gram), array_agg(-c) INTO account_ids, grams, deltas
    FROM (SELECT o.account_id, x.gram, count(*)::int AS c
            FROM old_rows o CROSS JOIN LATERAL waygate_search_grams(lower(o.name) || chr(1) || o.phone_number) AS x(gram)
           GROUP BY o.account_id, x.gram) AS removed;
  IF grams IS NOT NULL THEN
    PERFORM waygate_contact_grams_apply(account_ids, grams, deltas);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_contact_grams_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  account_ids text[];
  grams text[];
  deltas integer[];
BEGIN
  -- Only rows whose search text changed (a PATCH of the name or the number); most updates touch neither.
  SELECT array_agg(account_id), array_agg(gram), array_agg(delta) INTO account_ids, grams, deltas
    FROM (SELECT account_id, gram, sum(c)::int AS delta
            FROM (SELECT o.account_id, x.gram, -1 AS c
                    FROM old_rows o JOIN new_rows n ON n.id = o.id
                   CROSS JOIN LATERAL waygate_search_grams(lower(o.name) || chr(1) || o.phone_number) AS x(gram)
                   WHERE (o.name, o.phone_number, o.account_id) IS DISTINCT FROM (n.name, n.phone_number, n.account_id)
                  UNION ALL
                  SELECT n.account_id, x.gram, 1
                    FROM new_rows n JOIN old_rows o ON o.id = n.id
                   CROSS JOIN LATERAL waygate_search_grams(lower(n.name) || chr(1) || n.phone_number) AS x(gram)
                   WHERE (o.name, o.phone_number, o.account_id) IS DISTINCT FROM (n.name, n.phone_number, n.account_id)) AS d
           GROUP BY account_id, gram
          HAVING sum(c) <> 0) AS changed;
  IF grams IS NOT NULL THEN
    -- Queue behind the account's other contact writers (see the top of this file).
    PERFORM 1 FROM accounts WHERE id IN (SELECT DISTINCT unnest(account_ids)) ORDER BY id FOR NO KEY UPDATE;
    PERFORM waygate_contact_grams_apply(account_ids, grams, deltas);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER contacts_search_grams_insert AFTER INSERT ON contacts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_contact_grams_add();
--> statement-breakpoint
CREATE TRIGGER contacts_search_grams_delete AFTER DELETE ON contacts
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_contact_grams_remove();
--> statement-breakpoint
CREATE TRIGGER contacts_search_grams_update AFTER UPDATE ON contacts
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION waygate_contact_grams_change();
--> statement-breakpoint
-- Contacts that existed before this migration.
INSERT INTO contact_search_grams (account_id, gram, contacts)
SELECT c.account_id, x.gram, count(*)::int
  FROM contacts c CROSS JOIN LATERAL waygate_search_grams(lower(c.name) || chr(1) || c.phone_number) AS x(gram)
 GROUP BY c.account_id, x.gram
ON CONFLICT (account_id, gram) DO UPDATE SET contacts = EXCLUDED.contacts;
