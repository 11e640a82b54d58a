-- The search text of a contact, stored: "lower(name) \x01 phone digits", the expression of
-- contacts_search_trgm_idx (migration 0001). A page of a search with many matches walks the
-- newest-first index and tests every contact it passes; computing lower(name) || chr(1) ||
-- phone_number for each of them was half the cost of a search at a million contacts (a 3-letter
-- fragment matching 0.4% of them tests ~12,000 rows: 5.6 ms computed, 2.9 ms stored).
-- Not in src/db/schema.ts on purpose, like the trigram index: nothing writes it and Drizzle never
-- selects it; only the contact search SQL reads it.
ALTER TABLE "contacts" ADD COLUMN IF NOT EXISTS "search_text" text
  GENERATED ALWAYS AS (lower("name") || chr(1) || "phone_number") STORED;
