-- The one-time setup code of a fresh install: whoever signs up first in the dashboard of a server
-- listening beyond loopback must give it. One row at most; every process prints the same code, and
-- the first account's creation deletes it.
CREATE TABLE IF NOT EXISTS "setup_codes" (
	"id" boolean PRIMARY KEY DEFAULT true NOT NULL CHECK ("id"),
	"code" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
