-- How far a housekeeping sweep that walks a table in id order has got (e.g. message bodies: the
-- highest message id whose body was considered), so each batch starts where the last one ended
-- instead of re-reading what is already pruned.
CREATE TABLE IF NOT EXISTS "housekeeping_marks" (
  "name" text PRIMARY KEY NOT NULL,
  "mark" text NOT NULL
);
