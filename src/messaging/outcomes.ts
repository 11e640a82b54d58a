/**
 * Where a sent message's fate is written: the network's answer (SENT, FAILED, or QUEUED again
 * for a retry), a device that can no longer send (FAILED), and delivery and read receipts. Each
 * is one statement that changes the messages, counts them into their jobs, completes the jobs
 * that are done, refunds what failed, and appends the events, so the state change and its
 * events commit together. Locks are taken in the one order every writer uses: messages (in id
 * order, see LOCK_EACH_IN_ID_ORDER), then jobs (in id order, see COUNT_INTO_JOBS_SQL), then the
 * account (for the event seq).
 */
import type { Database, PreparedStatement, Queryable } from '../platform/database.js';
import type { Receipt } from '../network/network.js';
import { appendEventsSql } from '../events/event-store.js';
import { PRIORITY, type MessageRow } from './message-model.js';
import { COUNT_INTO_JOBS_SQL } from './job-store.js';
import { RECEIPT_FROM, sqlList, statusesBefore } from './message-states.js';
import { REFUND_SQL } from './quota-store.js';
import { COUNT_FAILURES_SQL, COUNT_INTO_DAYS_SQL } from './message-days.js';
import { DEQUEUE_SQL, ENQUEUE_SQL } from './queue-store.js';

/** A message the network took, and when it answered. */
export interface Sent {
  id: string;
  at: Date;
}

export interface Failure {
  id: string;
  code: string;
  message: string;
}

export interface Retry extends Failure {
  dueAt: Date;
}

/** SQL: the columns every outcome CTE returns. */
const RETURNED = (m: string): string =>
  `${m} AS message, ${m}.account_id, ${m}.device_id, ${m}.job_id, ${m}.priority, ${m}.quota_period_start, ${m}.error_code, waygate_message_json(${m}) AS event_data`;

/**
 * SQL: the CTEs after `sent` and `failed` (each with RETURNED's columns): refunds for the failed,
 * counts into their jobs (completing those that are done), the message.status and
 * bulk_job.completed events, and the day's counts (message-days.ts, after the account's lock).
 * `first` (CTE names) run before the jobs are counted, so their locks come before those of the
 * jobs and the account.
 */
const COUNT_REFUND_AND_EVENTS = (first: string[] = []): string => `
  refunded AS (${REFUND_SQL('(SELECT account_id, quota_period_start AS period_start, 1 AS n FROM failed)')}),
  ended AS (
    SELECT job_id, true AS sent FROM sent WHERE job_id IS NOT NULL
    UNION ALL
    SELECT job_id, false FROM failed WHERE job_id IS NOT NULL AND ${['refunded', ...first].map((cte) => `(SELECT count(*) FROM ${cte})`).join(' + ')} >= 0),
  counts AS (SELECT job_id, count(*) FILTER (WHERE sent)::int AS sent, count(*) FILTER (WHERE NOT sent)::int AS failed, count(*)::int AS n FROM ended GROUP BY job_id),
  jobs AS (${COUNT_INTO_JOBS_SQL('counts', { sent_count: 'c.sent', failed_count: 'c.failed' }, 'c.n')}),
  src AS (
    SELECT account_id, 'message.status' AS type, event_data AS data FROM sent
    UNION ALL
    SELECT account_id, 'message.status', event_data FROM failed
    UNION ALL
    SELECT account_id, 'bulk_job.completed', event_data FROM jobs WHERE just_completed),
  ${appendEventsSql('src')},
  day_src AS (
    SELECT account_id, device_id, 1 AS sent, 0 AS delivered, 0 AS read, 0 AS failed, 0 AS incoming FROM sent
    UNION ALL
    SELECT account_id, device_id, 0, 0, 0, 1, 0 FROM failed),
  days AS (${COUNT_INTO_DAYS_SQL('day_src', 'ev_bump')}),
  day_failures AS (${COUNT_FAILURES_SQL('failed', 'ev_bump')})`;

/**
 * SQL (a CTE body): locks, one key look-up at a time and in the order of `sorted` (a FROM item
 * `s` with an `id` column, sorted by IN_ID_ORDER), the messages it names that `where` (over `m`)
 * still picks once locked; returns s's columns and the locked row's status as `prev`.
 *
 * Every statement that locks several messages locks them in id order. Outcomes and receipts of
 * one account run side by side, and a receipt may overtake its outcome: two statements that each
 * locked several messages in an order of their own (an UPDATE … FROM locks in its join's order, a
 * receipt's look-up in network id order) could each hold a message the other waits for, and an
 * outcome that loses a deadlock three times releases its messages, which are then sent again.
 * A look-up a row, never a join: on a table whose statistics are stale (a fresh one filling up),
 * a join may read the whole table once a row; a receipt's look-up by network id is kept one too
 * (OFFSET 0: a subquery PostgreSQL does not merge into a join). "C": the byte order, whatever
 * the database's collation.
 */
const IN_ID_ORDER = (s: string): string => `ORDER BY ${s}.id COLLATE "C"`;
const LOCK_EACH_IN_ID_ORDER = (sorted: string, where: string, lock: 'FOR UPDATE' | 'FOR NO KEY UPDATE'): string =>
  `SELECT s.*, x.status AS prev FROM ${sorted} CROSS JOIN LATERAL (
     SELECT m.status FROM messages m WHERE m.id = s.id${where ? ` AND ${where}` : ''} ${lock}) AS x`;

/** SQL: true once CTE `locked` has run; a statement's writes on messages wait for it by this qual. */
const AFTER_LOCKS = `(SELECT count(*) FROM locked) >= 0`;

/**
 * SQL: messages `m` named by the rows of `source` (an unnest with an id column), claimed by
 * worker $2 and still SENDING. Driven by the source, one key lookup each: matching every row
 * against the whole array instead made a generic plan that joined the two quadratically.
 */
const CLAIMED = (m: string, source: string): string => `${m}.id = ${source}.id AND ${m}.status = 'SENDING' AND ${m}.claimed_by = $2 AND ${AFTER_LOCKS}`;

/**
 * The network's answers for messages claimed by a worker, in one statement: SENT ($1, at $10),
 * FAILED ($3-$5), QUEUED again for a retry ($6-$9). A message's sentAt is when the network
 * answered (this host's clock, as are the receipts' times), not when this statement runs, which
 * may wait behind the account's other writes; never before its createdAt (the database's clock).
 * Returns the rows of the direct sends that ended, as written, for their waiting requests. Key
 * lookups and inserts only, so it is planned once per connection (planning cost more than
 * running it for small batches).
 */
const OUTCOMES: Omit<PreparedStatement, 'values'> = {
  name: 'messages_outcomes',
  genericPlan: true,
  text: `WITH locked AS MATERIALIZED (${LOCK_EACH_IN_ID_ORDER(
    `(SELECT i.id FROM unnest($1::text[] || $3::text[] || $6::text[]) AS i(id) ${IN_ID_ORDER('i')}) AS s`,
    '',
    'FOR NO KEY UPDATE',
  )}),
   sent AS (
     UPDATE messages m SET status = 'SENT', sent_at = GREATEST(s.at, m.created_at), claimed_by = NULL, error_code = NULL, error_message = NULL
       FROM unnest($1::text[], $10::timestamptz[]) AS s(id, at)
      WHERE ${CLAIMED('m', 's')}
      RETURNING ${RETURNED('m')}),
   failed AS (
     UPDATE messages m SET status = 'FAILED', failed_at = now(), claimed_by = NULL, error_code = f.code, error_message = f.message
       FROM unnest($3::text[], $4::text[], $5::text[]) AS f(id, code, message)
      WHERE ${CLAIMED('m', 'f')}
      RETURNING ${RETURNED('m')}),
   retried AS (
     UPDATE messages m SET status = 'QUEUED', claimed_by = NULL, error_code = r.code, error_message = r.message
       FROM unnest($6::text[], $7::timestamptz[], $8::text[], $9::text[]) AS r(id, due_at, code, message)
      WHERE ${CLAIMED('m', 'r')}
      RETURNING m.id, m.device_id, m.priority, r.due_at),
   requeued AS (${ENQUEUE_SQL('retried')}),
   ${COUNT_REFUND_AND_EVENTS(['retried'])}
   SELECT (message).* FROM sent WHERE priority = ${PRIORITY.direct}
   UNION ALL
   SELECT (message).* FROM failed WHERE priority = ${PRIORITY.direct}`,
};

/** Writes the network's answers for messages claimed by `workerId`; returns the direct sends' rows as written. */
export async function writeOutcomes(db: Database, workerId: string, sent: Sent[], failed: Failure[], retry: Retry[]): Promise<MessageRow[]> {
  return db.queryPrepared<MessageRow>({
    ...OUTCOMES,
    values: [
      sent.map((s) => s.id),
      workerId,
      failed.map((f) => f.id),
      failed.map((f) => f.code),
      failed.map((f) => f.message),
      retry.map((r) => r.id),
      retry.map((r) => r.dueAt),
      retry.map((r) => r.code),
      retry.map((r) => r.message),
      sent.map((s) => s.at),
    ],
  });
}

/** Fails every message of a device that may still be sent (the device was logged out or removed); returns how many. */
export async function failWaiting(db: Queryable, deviceId: string, code: string, message: string): Promise<number> {
  const waiting = `m.status IN ${sqlList(statusesBefore('FAILED'))}`;
  const [row] = await db.query<{ n: number }>(
    `WITH sent AS (SELECT NULL::text AS account_id, NULL::text AS device_id, NULL::text AS job_id, NULL::jsonb AS event_data WHERE false),
     locked AS MATERIALIZED (${LOCK_EACH_IN_ID_ORDER(
       `(SELECT m.id FROM messages m WHERE m.device_id = $1 AND ${waiting} ${IN_ID_ORDER('m')}) AS s`,
       waiting,
       'FOR NO KEY UPDATE',
     )}),
     failed AS (
       UPDATE messages m SET status = 'FAILED', failed_at = now(), claimed_by = NULL, error_code = $2, error_message = $3
         FROM locked k WHERE m.id = k.id AND ${waiting}
        RETURNING ${RETURNED('m')}),
     dequeued AS (${DEQUEUE_SQL('SELECT (message).id FROM failed')}),
     ${COUNT_REFUND_AND_EVENTS()}
     SELECT count(*)::int AS n FROM failed`,
    [deviceId, code, message],
  );
  return row?.n ?? 0;
}

/** A receipt of one of the account's devices. */
export interface DeviceReceipt extends Receipt {
  deviceId: string;
}

/**
 * Applies one kind of receipt (of any devices of one account), forward only, in one statement (with its jobs' and the day's counts): a READ that overtakes DELIVERED
 * lands READ and stays there, a receipt for a message still SENDING also counts it as sent, and
 * a consumer sees every step (a receipt that overtook SENT or DELIVERED also writes the step it
 * skipped, just before its own). Timestamps never go backwards either: the network's receipt
 * time may be earlier than the sentAt stamped on its acknowledgement.
 */
export async function applyReceipts(db: Pick<Database, 'queryPrepared'>, status: 'DELIVERED' | 'READ', receipts: DeviceReceipt[]): Promise<void> {
  const receivable = `m.status IN ${sqlList(RECEIPT_FROM[status])}`;
  const set =
    status === 'DELIVERED'
      ? `status = 'DELIVERED', delivered_at = GREATEST(o.at, m.sent_at), sent_at = COALESCE(m.sent_at, o.at)`
      : `status = 'READ', read_at = GREATEST(o.at, m.delivered_at, m.sent_at), delivered_at = COALESCE(m.delivered_at, GREATEST(o.at, m.sent_at)),
         sent_at = COALESCE(m.sent_at, o.at)`;
  await db.queryPrepared({
    // Named (parsed once per connection), but not on the generic plans' connections: it waits for
    // the account's lock, and those connections also carry the network's hand-overs.
    name: `messages_receipts_${status.toLowerCase()}`,
    text: `WITH r AS (SELECT DISTINCT ON (dev, nid) dev, nid, at FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS r(dev, nid, at) ORDER BY dev, nid, at),
          found AS MATERIALIZED (SELECT f.id, r.at FROM r CROSS JOIN LATERAL (
                  SELECT m.id FROM messages m
                   WHERE m.device_id = r.dev AND m.network_message_id = r.nid AND m.direction = 'out' AND ${receivable}
                  OFFSET 0) AS f
                 ${IN_ID_ORDER('f')}),
          o AS MATERIALIZED (${LOCK_EACH_IN_ID_ORDER('found AS s', receivable, 'FOR UPDATE')}),
          u AS (UPDATE messages m SET ${set}, claimed_by = NULL FROM o WHERE m.id = o.id
                RETURNING m.job_id, m.account_id, m.device_id, o.prev, waygate_message_json(m) AS event_data),
          counts AS (
            SELECT job_id,
                   count(*) FILTER (WHERE prev = 'SENDING')::int AS sent,
                   count(*) FILTER (WHERE prev IN ('SENDING', 'SENT'))::int AS delivered,
                   ${status === 'READ' ? 'count(*)::int' : '0'} AS read
              FROM u WHERE job_id IS NOT NULL GROUP BY job_id),
          jobs AS (${COUNT_INTO_JOBS_SQL('counts', { sent_count: 'c.sent', delivered_count: 'c.delivered', read_count: 'c.read' }, 'c.sent')}),
          src AS (
            SELECT account_id, 'message.status' AS type,
                   event_data || '{"status": "SENT", "deliveredAt": null, "readAt": null}'::jsonb AS data
              FROM u WHERE prev = 'SENDING'
            UNION ALL
            SELECT account_id, 'message.status', event_data || '{"status": "DELIVERED", "readAt": null}'::jsonb
              FROM u WHERE $4::text = 'READ' AND prev IN ('SENDING', 'SENT')
            UNION ALL
            SELECT account_id, 'message.status', event_data FROM u
            UNION ALL
            SELECT account_id, 'bulk_job.completed', event_data FROM jobs WHERE just_completed),
          ${appendEventsSql('src')},
          day_src AS (
            SELECT account_id, device_id, (prev = 'SENDING')::int AS sent, (prev IN ('SENDING', 'SENT'))::int AS delivered,
                   ($4::text = 'READ')::int AS read, 0 AS failed, 0 AS incoming
              FROM u),
          days AS (${COUNT_INTO_DAYS_SQL('day_src', 'ev_bump')})
     SELECT 1`,
    values: [receipts.map((r) => r.deviceId), receipts.map((r) => r.networkMessageId), receipts.map((r) => r.at), status],
  });
}
