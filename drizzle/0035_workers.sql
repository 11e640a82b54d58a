-- Live workers: each lease round renews its row, so every worker knows how many share the
-- devices and takes (or gives back) enough to hold close to its fair share.
CREATE TABLE IF NOT EXISTS "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
