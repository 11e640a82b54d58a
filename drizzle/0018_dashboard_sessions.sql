-- Dashboard sign-in: server-side sessions (the cookie holds a random id; only its SHA-256 is
-- stored, so a copy of the database cannot be replayed as a cookie), each with its own CSRF
-- token, and failed log-ins, counted in the database so the login limit holds across nodes.
CREATE TABLE dashboard_sessions (
  id_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
--> statement-breakpoint
CREATE INDEX dashboard_sessions_user_idx ON dashboard_sessions (user_id);
--> statement-breakpoint
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);
--> statement-breakpoint
CREATE TABLE dashboard_login_failures (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email text NOT NULL,
  ip text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX dashboard_login_failures_email_idx ON dashboard_login_failures (email, failed_at);
--> statement-breakpoint
CREATE INDEX dashboard_login_failures_ip_idx ON dashboard_login_failures (ip, failed_at);
