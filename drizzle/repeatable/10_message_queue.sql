-- The ids of a device's waiting messages that are due (priority <= p_max_priority: 0 direct sends
-- only, 1 everything), direct sends first, oldest first, at most p_limit, with their queue rows
-- and messages locked (SKIP LOCKED on both: a claim never waits, so it cannot deadlock with a
-- statement that locks a waiting message before its queue row, such as a cancel).
--
-- The settings pin the ordered walk of message_queue_due_idx whatever the statistics say: when
-- they lag behind a burst of inserts (a 100,000-recipient job fanned out in a second), the
-- planner chose a bitmap scan and a sort of every due message of the device, 250 ms per claim of
-- 1,000 instead of 15 ms. ROWS 1: one claim statement calls this once per device asked (LATERAL),
-- and at the default estimate of 1,000 rows a call the joins that follow it became sequential
-- scans of messages and bulk_jobs; a paced device claims one message a turn. PL/pgSQL, not SQL:
-- a SQL function that cannot be inlined (its SET clauses) plans its query again in every
-- statement that calls it, about 0.35 ms of a claim of a few messages; PL/pgSQL keeps one
-- generic plan per connection.
CREATE OR REPLACE FUNCTION waygate_due_messages(p_device text, p_max_priority int, p_limit int) RETURNS SETOF text
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  SELECT q.id FROM message_queue q JOIN messages m ON m.id = q.id
   WHERE q.device_id = p_device AND q.priority <= p_max_priority AND q.due_at <= now()
   ORDER BY q.priority, q.due_at, q.id
   LIMIT p_limit
   FOR NO KEY UPDATE OF q, m SKIP LOCKED;
END
$$;
