-- A device's due actions (edits, deletes for everyone, read receipts on their way to the network),
-- oldest first (due_at, then id), at most p_limit, locked (SKIP LOCKED: a claim never waits);
-- each as the address (ctid) of its row as locked, which is its newest version and stays put
-- until the claim's transaction ends, so the claim updates them by address.
--
-- The settings pin the ordered walk of message_actions_due_idx (device_id, due_at, id), which
-- stops after p_limit rows: done actions are deleted, so the table is nearly empty whenever it is
-- analysed, and on such statistics the planner chose a bitmap scan and a sort of every due action
-- of the device. PL/pgSQL keeps one generic plan per connection (see 10_message_queue.sql).
CREATE OR REPLACE FUNCTION waygate_due_actions(p_device text, p_limit int)
RETURNS SETOF tid
LANGUAGE plpgsql VOLATILE ROWS 10
SET enable_bitmapscan = off SET enable_sort = off SET enable_incremental_sort = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  SELECT a.ctid FROM message_actions a
   WHERE a.device_id = p_device AND a.due_at <= now()
   ORDER BY a.due_at, a.id
   LIMIT p_limit
   FOR UPDATE SKIP LOCKED;
END
$$;
