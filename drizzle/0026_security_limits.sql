-- Log-in throttle: one row per (email, client address), plus one per address with email '' for
-- every email tried from it. An attempt is admitted and counted by one upsert (the row lock makes
-- check and count one atomic step, so parallel attempts cannot all pass), and once the free
-- attempts are spent each admitted one pushes next_allowed_at out by a delay that doubles.
-- Refused attempts do not extend anything, so nobody can keep an owner locked out from elsewhere.
DROP TABLE IF EXISTS dashboard_login_failures;
--> statement-breakpoint
CREATE TABLE dashboard_login_throttle (
  email text NOT NULL,
  ip text NOT NULL,
  attempts integer NOT NULL,
  last_attempt_at timestamptz NOT NULL,
  next_allowed_at timestamptz NOT NULL,
  PRIMARY KEY (email, ip)
);
--> statement-breakpoint
CREATE INDEX dashboard_login_throttle_last_idx ON dashboard_login_throttle (last_attempt_at);
--> statement-breakpoint
-- Request rate counters shared by every process on PostgreSQL (fixed windows per key). UNLOGGED:
-- a crash of the server forgets the current minute's counts, which is harmless for a limiter.
CREATE UNLOGGED TABLE rate_limit_hits (
  key text PRIMARY KEY,
  hits integer NOT NULL,
  resets_at timestamptz NOT NULL
);
--> statement-breakpoint
CREATE INDEX rate_limit_hits_resets_idx ON rate_limit_hits (resets_at);
