-- Raises serialization_failure (40001, which the callers run again) when `skipped` > 0: rows a
-- statement locked, and must write, that it did not write. Under READ COMMITTED a statement's
-- snapshot is taken when it starts; a row another transaction changes and commits after that,
-- while the statement waits for its lock, is locked as its newest version, which the snapshot
-- cannot see, so an UPDATE that finds the locked row by its address (ctid) skips it without a
-- word. Run again, the statement's new snapshot sees the change. Returns true otherwise.
CREATE OR REPLACE FUNCTION waygate_rerun_if_skipped(skipped bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF skipped > 0 THEN
    RAISE EXCEPTION '% locked row(s) changed after the statement''s snapshot was taken; run it again', skipped
      USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN true;
END
$$;
