-- The quota period that contains `at`, for a plan that started at `anchor`: whole months (or
-- years) counted from the anchor in UTC, each boundary anchor + k months, clamped at month ends
-- the way PostgreSQL adds months (Jan 31 + 1 month = Feb 28/29, + 2 months = Mar 31). The one
-- definition of a period: sends reserve quota with it and GET /account shows it.
CREATE OR REPLACE FUNCTION waygate_period(anchor timestamptz, period text, at timestamptz,
                                          OUT period_start timestamptz, OUT period_end timestamptz)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  step int := CASE WHEN period = 'year' THEN 12 ELSE 1 END;
  a timestamp := anchor AT TIME ZONE 'UTC';
  t timestamp := at AT TIME ZONE 'UTC';
  n int := 0;
BEGIN
  IF t >= a THEN
    n := greatest(0, (((extract(year FROM t) - extract(year FROM a)) * 12 + (extract(month FROM t) - extract(month FROM a)))::int / step) - 1);
    WHILE a + make_interval(months => (n + 1) * step) <= t LOOP
      n := n + 1;
    END LOOP;
  END IF;
  period_start := (a + make_interval(months => n * step)) AT TIME ZONE 'UTC';
  period_end := (a + make_interval(months => (n + 1) * step)) AT TIME ZONE 'UTC';
END $$;
