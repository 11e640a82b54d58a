/**
 * Where a sent message's fate is written: the network's answer (SENT, FAILED, or QUEUED again
 * for a retry), a device that can no longer send (FAILED), and delivery and read receipts. Each
 * is one statement that changes the messages, counts them into their jobs, completes the jobs
 * that are done, refunds what failed, and appends the events, so the state change and its
 * events commit together. Locks are taken in the one order every writer uses: messages (in id
 * order, see LOCK_EACH_IN_ID_ORDER), then jobs (in id order, see COUNT_INTO_JOBS_SQL), then the
 * account (for the event seq).
 */
import { RERUN_IF_SKIPPED, type Database, type PreparedStatement, type Queryable } from '../platform/database.js';
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
 * Which parts an outcome statement has. PostgreSQL sets up every part of a statement on each run,
 * opening its tables and indexes and preparing its expressions, whether the part has rows or not:
 * for the small batches of direct sends that set-up cost more than the rows. So a statement holds
 * only the parts its batch needs; `jobs` may be left out only when no message of the batch
 * belongs to a job (a message's job never changes).
 */
export interface OutcomeParts {
  sent: boolean;
  failed: boolean;
  retried: boolean;
  jobs: boolean;
}

/**
 * SQL: the CTEs after `sent` and `failed` (each with RETURNED's columns, where `parts` has them):
 * refunds for the failed, counts into their jobs (completing those that are done), the
 * message.status and bulk_job.completed events, and the day's counts (message-days.ts, after the
 * account's lock). `first` (CTE names) run before the jobs are counted, so their locks come
 * before those of the jobs and the account.
 */
const COUNT_REFUND_AND_EVENTS = (parts: Omit<OutcomeParts, 'retried'>, first: string[] = []): string => {
  const ended = (['sent', 'failed'] as const).filter((cte) => parts[cte]);
  // Whatever must run first (the refunds too) runs before the jobs' locks, or, with no jobs to
  // count, before the events' (the account's lock): a qual on the last arm that reads it.
  const before = [...(parts.failed ? ['refunded'] : []), ...first];
  const waitFor = (i: number): string =>
    i === ended.length - 1 && before.length > 0 ? ` AND ${before.map((cte) => `(SELECT count(*) FROM ${cte})`).join(' + ')} >= 0` : '';
  const ctes: string[] = [];
  if (parts.failed) ctes.push(`refunded AS (${REFUND_SQL('(SELECT account_id, quota_period_start AS period_start, 1 AS n FROM failed)')})`);
  if (parts.jobs) {
    ctes.push(
      `ended AS (${ended.map((cte, i) => `SELECT job_id, ${cte === 'sent'} AS sent FROM ${cte} WHERE job_id IS NOT NULL${waitFor(i)}`).join(' UNION ALL ')})`,
      `counts AS (SELECT job_id, count(*) FILTER (WHERE sent)::int AS sent, count(*) FILTER (WHERE NOT sent)::int AS failed, count(*)::int AS n FROM ended GROUP BY job_id)`,
      `jobs AS (${COUNT_INTO_JOBS_SQL('counts', { sent_count: 'c.sent', failed_count: 'c.failed' }, 'c.n')})`,
    );
  }
  const events = ended.map((cte, i) => `SELECT account_id, 'message.status' AS type, event_data AS data FROM ${cte} WHERE true${parts.jobs ? '' : waitFor(i)}`);
  if (parts.jobs) events.push(`SELECT account_id, 'bulk_job.completed', event_data FROM jobs WHERE just_completed`);
  ctes.push(
    `src AS (${events.join(' UNION ALL ')})`,
    appendEventsSql('src').trim(),
    `day_src AS (${ended.map((cte) => `SELECT account_id, device_id, ${cte === 'sent' ? 1 : 0} AS sent, 0 AS delivered, 0 AS read, ${cte === 'failed' ? 1 : 0} AS failed, 0 AS incoming FROM ${cte}`).join(' UNION ALL ')})`,
    `days AS (${COUNT_INTO_DAYS_SQL('day_src', 'ev_bump')})`,
  );
  if (parts.failed) ctes.push(`day_failures AS (${COUNT_FAILURES_SQL('failed', 'ev_bump')})`);
  return ctes.join(',\n  ');
};

/**
 * SQL (a CTE body): locks, one key look-up at a time and in the order of `sorted` (a FROM item
 * `s` with an `id` column, sorted by IN_ID_ORDER), the messages it names that `where` (over `m`)
 * still picks once locked; returns s's columns, the locked row's status as `prev`, its claimer
 * as `holder` and its address (ctid) as `address`. A locked row is the newest version and cannot
 * move before the statement's transaction ends: the statement's UPDATE finds it by that address
 * (ON_LOCKED), a TID scan, with no second descent of the primary key. A row changed after the
 * statement's snapshot is a version the TID scan cannot see, so every statement that writes by
 * ON_LOCKED checks that it wrote what it locked (RERUN_IF_SKIPPED).
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
  `SELECT s.*, x.status AS prev, x.claimed_by AS holder, x.address FROM ${sorted} CROSS JOIN LATERAL (
     SELECT m.status, m.claimed_by, m.ctid AS address FROM messages m WHERE m.id = s.id${where ? ` AND ${where}` : ''} ${lock}) AS x`;

/**
 * SQL: the message `m` that row `k` of a LOCK_EACH_IN_ID_ORDER CTE locked, by its address. The
 * join is on the address alone, so the only way to read `m` is a TID scan for each row of `k`
 * (sequential scans are off where plans are kept): no plan of it reads more of messages than the
 * rows locked, whatever the statistics said when it was made.
 */
const ON_LOCKED = (m: string, k: string): string => `${m}.ctid = ${k}.address`;

/** SQL: the message `m` locked by row `k`, claimed by the worker `worker` (a SQL expression) and still SENDING. */
const CLAIMED = (m: string, k: string, worker: string): string =>
  `${ON_LOCKED(m, k)} AND ${m}.status = 'SENDING' AND ${m}.claimed_by = ${worker}`;

/** What an outcome statement writes: the network's answers for messages claimed by one worker. */
interface OutcomeInput {
  workerId: string;
  sent: Sent[];
  failed: Failure[];
  retry: Retry[];
}

/**
 * The network's answers for messages claimed by a worker, in one statement: SENT, FAILED, QUEUED
 * again for a retry (each part only where `parts` has it, see OutcomeParts). A message's sentAt
 * is when the network answered (this host's clock, as are the receipts' times), not when this
 * statement runs, which may wait behind the account's other writes; never before its createdAt
 * (the database's clock). Returns the rows of the direct sends that ended, as written, for their
 * waiting requests. Key lookups and inserts only, so it is planned once per connection (planning
 * cost more than running it for small batches). Its parameters are numbered in the order the
 * parts it has use them (a parameter no part uses would have no type).
 */
function outcomesStatement(parts: Omit<OutcomeParts, 'sent'>): Omit<PreparedStatement, 'values'> & { values: (input: OutcomeInput) => unknown[] } {
  const pickers: ((input: OutcomeInput) => unknown)[] = [];
  const param = (type: string, pick: (input: OutcomeInput) => unknown): string => {
    pickers.push(pick);
    return `$${pickers.length}::${type}`;
  };
  const worker = param('text', (i) => i.workerId);
  const sentIds = param('text[]', (i) => i.sent.map((s) => s.id));
  const sentAt = param('timestamptz[]', (i) => i.sent.map((s) => s.at));
  const failed = parts.failed && {
    ids: param('text[]', (i) => i.failed.map((f) => f.id)),
    codes: param('text[]', (i) => i.failed.map((f) => f.code)),
    messages: param('text[]', (i) => i.failed.map((f) => f.message)),
  };
  const retried = parts.retried && {
    ids: param('text[]', (i) => i.retry.map((r) => r.id)),
    dueAt: param('timestamptz[]', (i) => i.retry.map((r) => r.dueAt)),
    codes: param('text[]', (i) => i.retry.map((r) => r.code)),
    messages: param('text[]', (i) => i.retry.map((r) => r.message)),
  };
  // Every answer, one row each, with what its part writes: locked in id order, then each part
  // updates its own rows by their addresses.
  const answers = [
    `SELECT i.id, 'sent' AS part, i.at, NULL::text AS code, NULL::text AS message, NULL::timestamptz AS due_at FROM unnest(${sentIds}, ${sentAt}) AS i(id, at)`,
    ...(failed ? [`SELECT i.id, 'failed', NULL, i.code, i.message, NULL FROM unnest(${failed.ids}, ${failed.codes}, ${failed.messages}) AS i(id, code, message)`] : []),
    ...(retried ? [`SELECT i.id, 'retried', NULL, i.code, i.message, i.due_at FROM unnest(${retried.ids}, ${retried.dueAt}, ${retried.codes}, ${retried.messages}) AS i(id, due_at, code, message)`] : []),
  ].join(' UNION ALL ');
  const text = `WITH locked AS MATERIALIZED (${LOCK_EACH_IN_ID_ORDER(`(SELECT i.* FROM (${answers}) AS i ${IN_ID_ORDER('i')}) AS s`, '', 'FOR NO KEY UPDATE')}),
   sent AS (
     UPDATE messages m SET status = 'SENT', sent_at = GREATEST(k.at, m.created_at), claimed_by = NULL, error_code = NULL, error_message = NULL
       FROM locked k
      WHERE k.part = 'sent' AND ${CLAIMED('m', 'k', worker)}
      RETURNING ${RETURNED('m')}),
   ${
     failed
       ? `failed AS (
     UPDATE messages m SET status = 'FAILED', failed_at = now(), claimed_by = NULL, error_code = k.code, error_message = k.message
       FROM locked k
      WHERE k.part = 'failed' AND ${CLAIMED('m', 'k', worker)}
      RETURNING ${RETURNED('m')}),`
       : ''
   }
   ${
     retried
       ? `retried AS (
     UPDATE messages m SET status = 'QUEUED', claimed_by = NULL, error_code = k.code, error_message = k.message
       FROM locked k
      WHERE k.part = 'retried' AND ${CLAIMED('m', 'k', worker)}
      RETURNING m.id, m.device_id, m.priority, k.due_at),
   requeued AS (${ENQUEUE_SQL('retried')}),`
       : ''
   }
   ${COUNT_REFUND_AND_EVENTS({ sent: true, failed: parts.failed, jobs: parts.jobs }, retried ? ['retried'] : [])}
   SELECT (message).* FROM sent WHERE priority = ${PRIORITY.direct}${failed ? `
   UNION ALL
   SELECT (message).* FROM failed WHERE priority = ${PRIORITY.direct}` : ''}
   UNION ALL
   SELECT (NULL::messages).* WHERE NOT (SELECT ${RERUN_IF_SKIPPED([`SELECT count(*) FROM locked WHERE prev = 'SENDING' AND holder = ${worker}`], [
     'SELECT count(*) FROM sent',
     ...(failed ? ['SELECT count(*) FROM failed'] : []),
     ...(retried ? ['SELECT count(*) FROM retried'] : []),
   ])})`;
  const name = `messages_outcomes${parts.failed ? '_failed' : ''}${parts.retried ? '_retried' : ''}${parts.jobs ? '_jobs' : ''}`;
  return { name, genericPlan: true, text, values: (input) => pickers.map((pick) => pick(input)) };
}

/** The outcome statements, by the parts they have (eight at most). */
const OUTCOME_STATEMENTS = new Map<string, ReturnType<typeof outcomesStatement>>();

/**
 * Writes the network's answers for messages claimed by `workerId`; returns the direct sends' rows
 * as written. `jobs`: whether any of these messages may belong to a bulk job (false leaves the
 * jobs' counting out of the statement, so it must be known: from the claimed messages' jobId).
 */
export async function writeOutcomes(db: Pick<Database, 'queryPrepared'>, workerId: string, sent: Sent[], failed: Failure[], retry: Retry[], options: { jobs?: boolean } = {}): Promise<MessageRow[]> {
  const parts = { failed: failed.length > 0, retried: retry.length > 0, jobs: options.jobs ?? true };
  const key = `${parts.failed} ${parts.retried} ${parts.jobs}`;
  let statement = OUTCOME_STATEMENTS.get(key);
  if (!statement) OUTCOME_STATEMENTS.set(key, (statement = outcomesStatement(parts)));
  const { values, ...prepared } = statement;
  return db.queryPrepared<MessageRow>({ ...prepared, values: values({ workerId, sent, failed, retry }) });
}

/** Fails every message of a device that may still be sent (the device was logged out or removed); returns how many. */
export async function failWaiting(db: Queryable, deviceId: string, code: string, message: string): Promise<number> {
  const waiting = `m.status IN ${sqlList(statusesBefore('FAILED'))}`;
  const [row] = await db.query<{ n: number }>(
    `WITH locked AS MATERIALIZED (${LOCK_EACH_IN_ID_ORDER(
       `(SELECT m.id FROM messages m WHERE m.device_id = $1 AND ${waiting} ${IN_ID_ORDER('m')}) AS s`,
       waiting,
       'FOR NO KEY UPDATE',
     )}),
     failed AS (
       UPDATE messages m SET status = 'FAILED', failed_at = now(), claimed_by = NULL, error_code = $2, error_message = $3
         FROM locked k WHERE ${ON_LOCKED('m', 'k')} AND ${waiting}
        RETURNING ${RETURNED('m')}),
     dequeued AS (${DEQUEUE_SQL('SELECT (message).id FROM failed')}),
     ${COUNT_REFUND_AND_EVENTS({ sent: false, failed: true, jobs: true })}
     SELECT (SELECT count(*)::int FROM failed) AS n, ${RERUN_IF_SKIPPED(['SELECT count(*) FROM locked'], ['SELECT count(*) FROM failed'])}`,
    [deviceId, code, message],
  );
  return row?.n ?? 0;
}

/** A receipt of one of the account's devices. */
export interface DeviceReceipt extends Receipt {
  deviceId: string;
  /**
   * Its message's id, where the worker knows it (it handed the message over): the statement then
   * locks the message by its key, checking its device and network id, instead of looking it up
   * by them first (a quarter of a receipt's cost).
   */
  messageId?: string | undefined;
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
  // The message `m` that receipt `r` (a row with dev and nid) is for, while it may still take it:
  // what the look-up asks, and what a message named by id is checked against.
  const receiptOf = (r: string): string => `m.device_id = ${r}.dev AND m.network_message_id = ${r}.nid AND m.direction = 'out' AND ${receivable}`;
  const set =
    status === 'DELIVERED'
      ? `status = 'DELIVERED', delivered_at = GREATEST(o.at, m.sent_at), sent_at = COALESCE(m.sent_at, o.at)`
      : `status = 'READ', read_at = GREATEST(o.at, m.delivered_at, m.sent_at), delivered_at = COALESCE(m.delivered_at, GREATEST(o.at, m.sent_at)),
         sent_at = COALESCE(m.sent_at, o.at)`;
  await db.queryPrepared({
    // Named (parsed once per connection), but not on the generic plans' connections: it waits for
    // the account's lock, and those connections also carry the network's hand-overs.
    name: `messages_receipts_${status.toLowerCase()}`,
    text: `WITH r AS (SELECT DISTINCT ON (dev, nid) dev, nid, at, id FROM unnest($1::text[], $2::text[], $3::timestamptz[], $5::text[]) AS r(dev, nid, at, id) ORDER BY dev, nid, at),
          found AS MATERIALIZED (SELECT * FROM (
                   SELECT r.id, r.dev, r.nid, r.at FROM r WHERE r.id IS NOT NULL
                   UNION ALL
                   SELECT f.id, r.dev, r.nid, r.at FROM r CROSS JOIN LATERAL (
                     SELECT m.id FROM messages m
                      WHERE ${receiptOf('r')}
                     OFFSET 0) AS f
                    WHERE r.id IS NULL) AS f
                 ${IN_ID_ORDER('f')}),
          o AS MATERIALIZED (${LOCK_EACH_IN_ID_ORDER('found AS s', receiptOf('s'), 'FOR UPDATE')}),
          u AS (UPDATE messages m SET ${set}, claimed_by = NULL FROM o WHERE ${ON_LOCKED('m', 'o')}
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
     SELECT ${RERUN_IF_SKIPPED(['SELECT count(*) FROM o'], ['SELECT count(*) FROM u'])}`,
    values: [receipts.map((r) => r.deviceId), receipts.map((r) => r.networkMessageId), receipts.map((r) => r.at), status, receipts.map((r) => r.messageId ?? null)],
  });
}
