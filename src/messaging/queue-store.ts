/**
 * Every statement on the message_queue table alone: a waiting message's row, from the statement
 * that makes it wait to the one that ends the wait. The claim, which takes rows out of the queue
 * and marks their messages SENDING in one statement, is in message-store.ts.
 */
import type { Queryable } from '../platform/database.js';
import { PRIORITY } from './message-model.js';

/**
 * SQL (a data-modifying CTE body): queues waiting messages, the rows of `source` (a FROM item with
 * id, device_id, priority and due_at columns). A message has a queue row exactly while it is
 * QUEUED or SCHEDULED: every statement that makes a message wait queues it, every one that ends
 * the wait (claim, cancel, failure) dequeues it.
 */
export const ENQUEUE_SQL = (source: string): string =>
  `INSERT INTO message_queue (id, device_id, priority, due_at) SELECT id, device_id, priority, due_at FROM ${source}`;

/**
 * SQL (a data-modifying CTE body): takes messages out of the queue, `rows` an expression of their
 * queue rows' addresses (tid[]), deleted as a TID scan whatever the statistics say about the
 * queue's size. Run with the messages locked: writers lock a waiting message before its queue row.
 */
export const DEQUEUE_ROWS_SQL = (rows: string): string => `DELETE FROM message_queue WHERE ctid = ANY (${rows})`;

/**
 * SQL (a data-modifying CTE body): DEQUEUE_ROWS_SQL for messages `ids` (a query of their ids),
 * their rows found by waygate_queue_tids (drizzle/repeatable/10_message_queue.sql). Run after the
 * messages were locked (an UPDATE's RETURNING).
 */
export const DEQUEUE_SQL = (ids: string): string => DEQUEUE_ROWS_SQL(`waygate_queue_tids(ARRAY(${ids}))`);

/**
 * SQL: the predicate of message_queue_due_idx, for queue row `q`. Every row meets it; a query
 * that walks a device's range of that index states it, since the planner uses a partial index
 * only for a query that implies its predicate (the claim's walk in
 * drizzle/repeatable/10_message_queue.sql states it as `priority BETWEEN 0 AND ...`).
 */
const QUEUE_WALK_SQL = (q: string): string => `${q}.priority >= 0`;

/** SQL: the queue's priorities as a VALUES list, `p(priority)`: each is one range of the queue index. */
const PRIORITIES_SQL = `(VALUES ${Object.values(PRIORITY).map((p) => `(${p}::smallint)`).join(', ')}) AS p(priority)`;

/**
 * Of `deviceIds`, those with a message due now: the dispatch loops' safety net for a notification
 * that never came (one statement a second per worker, not one per device). Each priority (0
 * direct, 1 bulk) is one range of the queue index, so messages scheduled for later cost nothing.
 */
export async function devicesWithDue(db: Queryable, deviceIds: string[]): Promise<string[]> {
  if (deviceIds.length === 0) return [];
  const rows = await db.query<{ id: string }>(
    `SELECT d.id FROM unnest($1::text[]) AS d(id)
      WHERE EXISTS (SELECT 1 FROM ${PRIORITIES_SQL}
                     WHERE EXISTS (SELECT 1 FROM message_queue q WHERE q.device_id = d.id AND q.priority = p.priority AND ${QUEUE_WALK_SQL('q')} AND q.due_at <= now()))`,
    [deviceIds],
  );
  return rows.map((r) => r.id);
}

/**
 * When the next waiting message of the device becomes due (null: none waiting): the head of each
 * priority's range of the queue index (one short descent each). A plain min(due_at) read the
 * device's whole range, where the entries of messages claimed moments ago stay until vacuum:
 * milliseconds a call under a stream of direct sends, after every claim that found nothing. On
 * the main pool, not the generic plans' smaller one, where a device's claims and hand-overs wait
 * while its outcome writes are held up behind the account's lock.
 */
export async function nextDueAt(db: Queryable, deviceId: string): Promise<Date | null> {
  const [row] = await db.query<{ due_at: Date | null }>(
    `SELECT min(q.due_at) AS due_at FROM ${PRIORITIES_SQL}
       CROSS JOIN LATERAL (SELECT m.due_at FROM message_queue m WHERE m.device_id = $1 AND m.priority = p.priority AND ${QUEUE_WALK_SQL('m')}
                            ORDER BY m.due_at LIMIT 1) AS q`,
    [deviceId],
  );
  return row?.due_at ?? null;
}

/** Messages waiting whose time has come (the queue depth), or whose time is still ahead. */
export async function countWaiting(db: Queryable, which: 'due' | 'scheduled'): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM message_queue WHERE due_at ${which === 'due' ? '<=' : '>'} now()`);
  return row?.n ?? 0;
}
