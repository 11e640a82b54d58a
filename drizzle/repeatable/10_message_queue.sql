-- A device's waiting messages that are due (priority <= p_max_priority: 0 direct sends only, 1
-- everything), direct sends first, oldest first, at most p_limit, with their queue rows and
-- messages locked (SKIP LOCKED on both: a claim never waits, so it cannot deadlock with a
-- statement that locks a waiting message before its queue row, such as a cancel). Each comes with
-- the addresses (ctid) of its queue row and of its message as locked: a locked row is the newest
-- version and cannot move until the claim's transaction ends, so the claim deletes and updates
-- them by address, a TID scan whatever the statistics say, and no second descent of either
-- primary key.
--
-- The walk locks its queue rows, then each one's message is looked up and locked by its key, in
-- a LATERAL subquery of its own (OFFSET 0: not merged into a join). As a join, on the statistics
-- of a messages table analysed with pages and no rows (which the planner takes for one row
-- however many it holds), the message of each due row was found by a walk of the whole primary
-- key: a claim of 200 read 58,000 pages among 8,000 messages. A message locked by another
-- statement (a cancel under way) is skipped, and its queue row with it, as a locked queue row is.
--
-- `priority BETWEEN 0 AND ...`: the index is partial on priority >= 0 (migration 0052), which
-- every row meets; a query must imply it to use the index.
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
--
-- It replaces waygate_due_messages (the ids alone), which a database upgraded from an earlier
-- build keeps for that build while both run.
CREATE OR REPLACE FUNCTION waygate_due_rows(p_device text, p_max_priority int, p_limit int)
RETURNS TABLE (id text, queue_row tid, message_row tid)
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  WITH due AS (
    SELECT q.id, q.ctid AS queue_row FROM message_queue q
     WHERE q.device_id = p_device AND q.priority BETWEEN 0 AND p_max_priority AND q.due_at <= now()
     ORDER BY q.priority, q.due_at, q.id
     LIMIT p_limit
       FOR NO KEY UPDATE SKIP LOCKED)
  SELECT d.id, d.queue_row, x.message_row FROM due d
   CROSS JOIN LATERAL (SELECT m.ctid AS message_row FROM messages m WHERE m.id = d.id OFFSET 0 FOR NO KEY UPDATE SKIP LOCKED) AS x;
END
$$;

-- The row addresses (ctid) of the queue rows of messages p_ids, for DEQUEUE_SQL's delete, which
-- can then only be a TID scan. A queue is nearly empty whenever it is analysed, so the planner
-- takes it for one row whatever it holds: deleting by id as a join (`IN`, `USING`) walked the
-- whole queue once per id (a claim of 1,000 from a queue of 20,000 took 2.9 s, not 3 ms). Here
-- each id is one descent of the primary key, the one index a look-up by id can use (see
-- migration 0052). A queue row is never updated, so its address holds until it is deleted; the
-- messages are locked first, so no other writer deletes the row in between.
CREATE OR REPLACE FUNCTION waygate_queue_tids(p_ids text[]) RETURNS tid[]
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN ARRAY(
    SELECT x.tid FROM unnest(p_ids) AS i(id)
      CROSS JOIN LATERAL (SELECT q.ctid AS tid FROM message_queue q WHERE q.id = i.id) AS x);
END
$$;
