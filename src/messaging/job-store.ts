/**
 * Every statement on bulk_jobs: a job accepted with its recipients frozen, started, counted
 * into, completed, cancelled, and fanned out into messages chunk by chunk. Statements of the
 * message store and of outcomes compose COUNT_INTO_JOBS_SQL and START_JOBS_SQL into their own.
 */
import type { Queryable } from '../platform/database.js';
import type { ListingSource } from '../platform/listing.js';
import { appendEventsSql } from '../events/event-store.js';
import type { MessageType } from '../network/network.js';
import { BULK_JOB_COLUMNS, NETWORK_MESSAGE_ID_SQL, PRIORITY, type BulkJobRow, type KindPayload } from './message-model.js';
import { OPEN_JOB_STATUSES, jobIsDoneSql, sqlList, type JobStatus } from './message-states.js';
import { ENQUEUE_SQL } from './queue-store.js';

type Counter = 'sent_count' | 'failed_count' | 'cancelled_count' | 'delivered_count' | 'read_count';

/**
 * SQL: job rows `j` whose id is in `ids` (a subquery of job ids), locked in id order. Statements
 * that count into several jobs at once (outcomes and receipts, from every worker) must take the
 * jobs' locks in one order, or two of them deadlock: PostgreSQL locks the rows of an ORDER BY …
 * FOR UPDATE after sorting them, where an UPDATE … FROM locks them in its join's order.
 */
const JOBS_LOCKED_IN_ORDER = (j: string, ids: string): string =>
  `${j}.id IN (SELECT l.id FROM bulk_jobs l WHERE l.id IN (${ids}) ORDER BY l.id FOR NO KEY UPDATE)`;

/**
 * SQL (a data-modifying CTE body): adds, for each row (job_id, …) of CTE `counts`, the
 * expressions of `add` (over `c`, the counts row) to the job's counters, and completes the job if
 * that makes it done (jobIsDoneSql, `ended` being how many of its messages just ended). Returns
 * (account_id, just_completed, event_data) per job.
 *
 * Several jobs are locked in id order first (JOBS_LOCKED_IN_ORDER); one job is not: the UPDATE's
 * own lock is the only one it needs (there is no order to keep), and a job locked first and then
 * updated is locked twice. Two counts into one job that both waited for a third then deadlocked:
 * the UPDATE that met its snapshot's older version of the job took that version's tuple lock,
 * which the other count held while it waited for the first (a second's stall until PostgreSQL
 * broke it, and a rerun; three in four 100,000-message jobs). `OR` evaluates in order, so the
 * locking subquery runs only when the count is not 1.
 */
export function COUNT_INTO_JOBS_SQL(counts: string, add: Partial<Record<Counter, string>>, ended: string): string {
  const sets = Object.entries(add).map(([column, expression]) => `${column} = j.${column} + ${expression}`);
  const done = jobIsDoneSql('j', ended);
  return `
  UPDATE bulk_jobs j SET ${sets.join(', ')},
         status = CASE WHEN ${done} THEN 'COMPLETED' ELSE j.status END,
         completed_at = CASE WHEN ${done} THEN now() ELSE j.completed_at END
    FROM ${counts} c WHERE j.id = c.job_id AND ((SELECT count(*) FROM ${counts}) = 1 OR ${JOBS_LOCKED_IN_ORDER('j', `SELECT job_id FROM ${counts}`)})
  RETURNING j.account_id, j.completed_at = now()::timestamptz(3) AS just_completed, waygate_job_json(j) AS event_data`;
}

/** SQL (a data-modifying CTE body): the SCHEDULED jobs of the messages in CTE `claimed` start (PROCESSING). */
export const START_JOBS_SQL = (claimed: string): string => `
  UPDATE bulk_jobs SET status = 'PROCESSING'
   WHERE id IN (SELECT DISTINCT job_id FROM ${claimed} WHERE job_id IS NOT NULL) AND status = 'SCHEDULED'`;

/** Completes the jobs that are done (jobIsDone), with their bulk_job.completed events. */
export async function completeJobs(tx: Queryable, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await tx.query(
    `WITH done AS (
       UPDATE bulk_jobs j SET status = 'COMPLETED', completed_at = now()
        WHERE ${JOBS_LOCKED_IN_ORDER('j', 'SELECT unnest($1::text[])')} AND ${jobIsDoneSql('j')}
        RETURNING j.account_id, waygate_job_json(j) AS event_data),
     src AS (SELECT account_id, 'bulk_job.completed' AS type, event_data AS data FROM done),
     ${appendEventsSql('src')}
     SELECT count(*) FROM done`,
    [jobIds],
  );
}

export interface NewJob {
  id: string;
  accountId: string;
  deviceId: string;
  status: JobStatus;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  /** What the kind carries, copied into every message of the job. */
  payload: KindPayload | null;
  mentions: string[] | null;
  /** The explicit recipients, each once, in request order. */
  recipients: string[];
  groupIds: string[];
  scheduledAt: Date | null;
}

/**
 * Inserts a job with its recipient set frozen, de-duplicated by phone: explicit recipients in
 * request order, then group members. Node never holds the members as objects; the set stays one
 * array in one row. Without groups the set is the explicit recipients as given (each once
 * already), stored without the merge and its two sorts of the whole list. Returns how many
 * recipients it has.
 */
export async function insertJob(tx: Queryable, job: NewJob): Promise<number> {
  const list =
    job.groupIds.length === 0
      ? '$8::text[]'
      : `(SELECT COALESCE(array_agg(phone ORDER BY ord), '{}') FROM (
           SELECT DISTINCT ON (phone) phone, ord FROM (
             SELECT p AS phone, o AS ord FROM unnest($8::text[]) WITH ORDINALITY AS t(p, o)
             UNION ALL
             SELECT c.phone_number, 1e12 + row_number() OVER (ORDER BY gm.group_id, gm.added_at, c.id)
               FROM group_members gm JOIN contacts c ON c.id = gm.contact_id
              WHERE gm.group_id = ANY($9::text[]) AND c.account_id = $2
           ) AS everyone ORDER BY phone, ord
         ) AS unique_phones)`;
  const [row] = await tx.query<{ total_contacts: number }>(
    `INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, media_url, recipients, group_ids, total_contacts, scheduled_at, payload, mentions)
     SELECT $1, $2, $3, $4, $5, $6, $7, r.list, $9, cardinality(r.list), $10, $11::jsonb, $12::text[]
       FROM (SELECT ${list} AS list) AS r
     RETURNING total_contacts`,
    [job.id, job.accountId, job.deviceId, job.status, job.type, job.content, job.mediaUrl, job.recipients, job.groupIds, job.scheduledAt, job.payload === null ? null : JSON.stringify(job.payload), job.mentions],
  );
  return row!.total_contacts;
}

/** Records the period the job's messages were counted in (their refunds go back to it). */
export async function setJobQuotaPeriod(tx: Queryable, jobId: string, periodStart: Date): Promise<void> {
  await tx.query('UPDATE bulk_jobs SET quota_period_start = $2 WHERE id = $1', [jobId, periodStart]);
}

export async function getJob(db: Queryable, accountId: string, id: string): Promise<BulkJobRow | undefined> {
  const [row] = await db.query<BulkJobRow>(`SELECT ${BULK_JOB_COLUMNS} FROM bulk_jobs WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return row;
}

/** The account's jobs newest first along bulk_jobs_account_idx; a status has no index of its own, so it is a sparse filter. */
export function jobListingSource(accountId: string, status: string | undefined): ListingSource {
  const params: unknown[] = status ? [accountId, status] : [accountId];
  return { kind: 'bulk-jobs', table: 'bulk_jobs j', alias: 'j', columns: BULK_JOB_COLUMNS, where: ['j.account_id = $1'], sparse: status ? ['j.status = $2'] : [], params };
}

export interface LockedJob {
  status: JobStatus;
  total_contacts: number;
  fanned_out_at: Date | null;
  quota_period_start: Date | null;
}

/** Locks a job for a cancel: FOR UPDATE waits for fan-out chunks in flight (they hold it FOR KEY SHARE) and keeps new ones out. */
export async function lockJob(tx: Queryable, accountId: string, id: string): Promise<LockedJob | undefined> {
  const [job] = await tx.query<LockedJob>(
    'SELECT status, total_contacts, fanned_out_at, quota_period_start FROM bulk_jobs WHERE id = $1 AND account_id = $2 FOR UPDATE',
    [id, accountId],
  );
  return job;
}

/** Marks a job CANCELLED, counting `notFannedOut` recipients as cancelled; returns its bulk_job.cancelled event data. */
export async function markJobCancelled(tx: Queryable, id: string, notFannedOut: number): Promise<unknown> {
  const [updated] = await tx.query<{ event_data: unknown }>(
    `UPDATE bulk_jobs j SET status = 'CANCELLED', cancelled_at = now(), cancelled_count = cancelled_count + $2, recipients = NULL WHERE id = $1
     RETURNING waygate_job_json(j) AS event_data`,
    [id, notFannedOut],
  );
  return updated!.event_data;
}

/** Open jobs not yet fanned out, oldest first. */
export async function jobsToFanOut(db: Queryable): Promise<{ id: string; total_contacts: number }[]> {
  return db.query(
    `SELECT id, total_contacts FROM bulk_jobs WHERE fanned_out_at IS NULL AND status IN ${sqlList(OPEN_JOB_STATUSES)} ORDER BY created_at LIMIT 10`,
  );
}

/**
 * Holds an open, not fanned out job for a chunk insert (FOR KEY SHARE: counter updates go on, a
 * cancel's FOR UPDATE waits for the chunk, and a chunk that waited for a cancel sees it
 * CANCELLED) and takes the chunk's advisory lock. Returns the job's device, or undefined when the
 * job stopped or another loop holds the chunk.
 */
export async function holdJobChunk(tx: Queryable, jobId: string, chunk: number): Promise<string | undefined> {
  const [job] = await tx.query<{ status: JobStatus; device_id: string }>(
    `SELECT status, device_id FROM bulk_jobs WHERE id = $1 AND fanned_out_at IS NULL FOR KEY SHARE`,
    [jobId],
  );
  if (!job || !OPEN_JOB_STATUSES.includes(job.status)) return undefined;
  const [lock] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1), $2) AS locked', [jobId, chunk]);
  return lock?.locked ? job.device_id : undefined;
}

/** The id of the message at 1-based `position` of job `jobId`'s recipient list (SQL and JS agree). */
const bulkMessageIdSql = (jobIdSql: string, positionSql: string): string => `'msg_' || substr(${jobIdSql}, 5) || lpad((${positionSql})::text, 7, '0')`;
export const bulkMessageId = (jobId: string, position: number): string => `msg_${jobId.slice(4)}${String(position).padStart(7, '0')}`;

/** Inserts the messages of recipients start+1 .. start+size of the job; returns how many. */
export async function insertChunkMessages(tx: Queryable, jobId: string, start: number, size: number): Promise<number> {
  const [inserted] = await tx.query<{ n: number }>(
    `WITH chunk AS (
       SELECT j.id, j.account_id, j.device_id, j.type, j.content, j.media_url, j.payload, j.mentions, j.scheduled_at, j.quota_period_start, r.phone,
              ${bulkMessageIdSql('j.id', '$2::int + r.ord')} AS msg_id
         FROM bulk_jobs j, unnest(j.recipients[$2::int + 1 : $2::int + $3::int]) WITH ORDINALITY AS r(phone, ord)
        WHERE j.id = $1),
     ins AS (
       INSERT INTO messages (id, account_id, device_id, job_id, direction, peer, type, content, media_url, payload, mentions, status, priority,
                             network_message_id, quota_period_start, scheduled_at)
       SELECT c.msg_id, c.account_id, c.device_id, c.id, 'out', c.phone, c.type, c.content, c.media_url, c.payload, c.mentions,
              CASE WHEN c.scheduled_at > now() THEN 'SCHEDULED' ELSE 'QUEUED' END, ${PRIORITY.bulk},
              ${NETWORK_MESSAGE_ID_SQL('c.msg_id')}, c.quota_period_start, c.scheduled_at
         FROM chunk c
       RETURNING id, device_id, priority, COALESCE(scheduled_at, now()) AS due_at),
     queued AS (${ENQUEUE_SQL('ins')})
     SELECT count(*)::int AS n FROM ins`,
    [jobId, start, size],
  );
  return inserted?.n ?? 0;
}

/** Every chunk is in: the job is fanned out and its frozen list dropped; false if it already was. */
export async function markFannedOut(tx: Queryable, jobId: string): Promise<boolean> {
  const rows = await tx.query(`UPDATE bulk_jobs SET fanned_out_at = now(), recipients = NULL WHERE id = $1 AND fanned_out_at IS NULL RETURNING id`, [jobId]);
  return rows.length > 0;
}

/** Which of `groupIds` are not groups of the account. */
export async function unknownGroups(tx: Queryable, accountId: string, groupIds: string[]): Promise<string[]> {
  if (groupIds.length === 0) return [];
  const found = await tx.query<{ id: string }>('SELECT id FROM groups WHERE account_id = $1 AND id = ANY($2::text[])', [accountId, groupIds]);
  const known = new Set(found.map((g) => g.id));
  return groupIds.filter((id) => !known.has(id));
}

/** Wakes the fan-out loops of every worker when the transaction commits. */
export async function announceFanOut(tx: Queryable): Promise<void> {
  await tx.query(`SELECT pg_notify('waygate_dispatch', 'fanout')`);
}

/** Tells every worker, when the transaction commits, that the job was cancelled ('cancel:<jobId>'). */
export async function announceCancel(tx: Queryable, jobId: string): Promise<void> {
  await tx.query(`SELECT pg_notify('waygate_dispatch', 'cancel:' || $1::text)`, [jobId]);
}

/** Bulk jobs PROCESSING in every account, for the running-jobs gauge. */
export async function countRunningJobs(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM bulk_jobs WHERE status = 'PROCESSING'`);
  return row?.n ?? 0;
}
