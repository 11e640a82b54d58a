-- A timestamp as the API writes it (Date.toISOString: ISO 8601 UTC with milliseconds). STABLE,
-- not IMMUTABLE (to_char is STABLE): an IMMUTABLE wrapper around a STABLE call is not inlined,
-- and every timestamp of every event payload paid a function call (see migration 0019).
CREATE OR REPLACE FUNCTION waygate_ts(t timestamptz) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
