/**
 * The messages table is the queue. Only the worker holding a device's lease claims its
 * messages (SKIP LOCKED, direct sends first, oldest first); outcomes are written only where
 * `claimed_by` is still this worker. Every batch of outcomes is one transaction, with the job
 * counters and quota refunds it causes.
 */
import type { Database, Queryable } from '../platform/database.js';
import type { Receipt } from '../network/network.js';
import type { IncomingMedia, MessageType } from '../network/network.js';
import type { MessageRow } from './message-model.js';
import { messageTransitions } from '../platform/metrics.js';
import { workBudget } from '../platform/work-budget.js';
import { appendEvents, appendEventsSql, type EventType } from '../events/event-store.js';
import { refundQuota } from './quota.js';

/** An event to append at the end of a transaction, after every row it locks. */
interface PendingEvent {
  accountId: string;
  type: EventType;
  data: unknown;
}

export interface ClaimedMessage {
  id: string;
  accountId: string;
  jobId: string | null;
  to: string;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  networkMessageId: string;
  attempts: number;
  priority: number;
}

export interface Outcome {
  message: ClaimedMessage;
  result: { ok: true } | { ok: false; permanent: boolean; code: string; message: string };
}

export interface FinalizeSummary {
  sent: number;
  failed: number;
  retried: number;
  /** Direct sends whose outcome is now known (for the API's waiters). */
  directIds: string[];
  /** Their rows as written, when the outcome was written in the one-statement path. */
  directRows: MessageRow[];
}

/** Backoff for transient failures: 1 s, 2 s, 4 s … capped at 5 min, with ±20% jitter. */
export function retryDelayMs(attempt: number): number {
  const base = Math.min(300_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

export class MessageQueue {
  constructor(
    private readonly database: Database,
    private readonly workerId: string,
    private readonly maxAttempts: number,
    /** Called after events were written, to wake an in-process webhook worker at once. */
    private readonly onEvents: () => void = () => undefined,
    /** Receipts per statement (see WorkBudget). */
    private readonly receiptBatch = workBudget(database).receiptBatch,
  ) {}

  private wakeWebhooks(): void {
    this.onEvents();
  }

  /** Claims due messages of a device: priority 0 only, or any priority (direct first), up to `limit`. */
  async claim(deviceId: string, limit: number, onlyDirect: boolean): Promise<ClaimedMessage[]> {
    // One statement: claim, and move the claimed messages' scheduled jobs to PROCESSING.
    const rows = await this.database.query<{
      id: string;
      account_id: string;
      job_id: string | null;
      peer: string;
      type: MessageType;
      content: string;
      media_url: string | null;
      network_message_id: string;
      attempts: number;
      priority: number;
    }>(
      // waygate_due_messages walks the queue index in order (SKIP LOCKED), whatever the statistics say.
      // Unnamed (planned on each call): a plan kept from when the table was small would scan it.
      `WITH due AS (SELECT id FROM waygate_due_messages($1, $4, $2) AS id),
       claimed AS (
         UPDATE messages m SET status = 'SENDING', due_at = NULL, claimed_by = $3, attempts = m.attempts + 1, queued_at = COALESCE(m.queued_at, now())
           FROM due WHERE m.id = due.id
         RETURNING m.id, m.account_id, m.job_id, m.peer, m.type, m.content, m.media_url, m.network_message_id, m.attempts, m.priority),
       started AS (
         UPDATE bulk_jobs SET status = 'PROCESSING'
          WHERE id IN (SELECT DISTINCT job_id FROM claimed WHERE job_id IS NOT NULL) AND status = 'SCHEDULED')
       SELECT * FROM claimed`,
      [deviceId, limit, this.workerId, onlyDirect ? 0 : 1],
    );
    return rows.map((r) => ({
      id: r.id,
      accountId: r.account_id,
      jobId: r.job_id,
      to: r.peer,
      type: r.type,
      content: r.content,
      mediaUrl: r.media_url,
      networkMessageId: r.network_message_id,
      attempts: r.attempts,
      priority: r.priority,
    }));
  }

  /** When the next waiting message of the device becomes due (null: none waiting). */
  async nextDueAt(deviceId: string): Promise<Date | null> {
    const [row] = await this.database.query<{ due_at: Date | null }>(
      `SELECT min(due_at) AS due_at FROM messages WHERE device_id = $1 AND due_at IS NOT NULL`,
      [deviceId],
    );
    return row?.due_at ?? null;
  }

  /** Puts claimed messages back untouched (the lease was lost before they were handed over). */
  async release(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.database.query(
      `UPDATE messages SET status = 'QUEUED', due_at = now(), claimed_by = NULL, attempts = GREATEST(0, attempts - 1)
        WHERE id = ANY($1::text[]) AND status = 'SENDING' AND claimed_by = $2`,
      [ids, this.workerId],
    );
  }

  /** Claimed messages of a cancelled job that were not handed to the network (see cancelMessages). */
  async cancelClaimed(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const { count } = await this.database.transaction((tx) =>
      cancelMessages(tx, `id = ANY($1::text[]) AND status = 'SENDING' AND claimed_by = $2`, [ids, this.workerId]),
    );
    return count;
  }

  /** Messages a dead owner left in SENDING go back to the queue; resent with the same network id. */
  async recoverDevice(deviceId: string): Promise<number> {
    const rows = await this.database.query(
      `UPDATE messages SET status = 'QUEUED', due_at = now(), claimed_by = NULL WHERE device_id = $1 AND status = 'SENDING' RETURNING id`,
      [deviceId],
    );
    return rows.length;
  }

  async finalize(outcomes: Outcome[]): Promise<FinalizeSummary> {
    const sent = outcomes.filter((o) => o.result.ok).map((o) => o.message.id);
    const failed: { id: string; code: string; message: string }[] = [];
    const retry: { id: string; dueAt: Date; code: string; message: string }[] = [];
    for (const { message, result } of outcomes) {
      if (result.ok) continue;
      if (result.permanent || message.attempts >= this.maxAttempts) {
        failed.push({ id: message.id, code: result.code, message: result.permanent ? result.message : `${result.message} (gave up after ${message.attempts} attempts)` });
      } else {
        retry.push({ id: message.id, dueAt: new Date(Date.now() + retryDelayMs(message.attempts)), code: result.code, message: result.message });
      }
    }
    let directRows: MessageRow[] = [];
    // The network has taken these messages: their outcome must be written. A deadlock or a
    // serialization failure is retried; if writing still fails, the messages go back to the
    // queue and are handed over again with the same network id (the network de-duplicates).
    for (let attempt = 1; ; attempt++) {
      try {
        directRows = await this.writeOutcomes(sent, failed, retry);
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (attempt < 3 && (code === '40P01' || code === '40001')) continue;
        await this.release(outcomes.map((o) => o.message.id)).catch(() => undefined);
        throw error;
      }
    }
    this.wakeWebhooks();
    if (sent.length > 0) messageTransitions.inc({ status: 'SENT' }, sent.length);
    if (failed.length > 0) messageTransitions.inc({ status: 'FAILED' }, failed.length);
    if (retry.length > 0) messageTransitions.inc({ status: 'RETRY' }, retry.length);
    return {
      sent: sent.length,
      failed: failed.length,
      retried: retry.length,
      directIds: outcomes.filter((o) => o.message.priority === 0 && (o.result.ok || failed.some((f) => f.id === o.message.id))).map((o) => o.message.id),
      directRows,
    };
  }

  private async writeOutcomes(
    sent: string[],
    failed: { id: string; code: string; message: string }[],
    retry: { id: string; dueAt: Date; code: string; message: string }[],
  ): Promise<MessageRow[]> {
    let directRows: MessageRow[] = [];
    if (failed.length === 0 && retry.length === 0) {
      // The common case, in one statement: mark SENT, count them into their jobs, complete the
      // jobs that are done, and hand back the direct sends' rows for their waiting requests.
      if (sent.length > 0) {
        directRows = await this.database.queryPrepared<MessageRow>({
          // Planned once: direct sends come in small batches, whose planning cost more than running them.
          name: 'queue_sent',
          genericPlan: true,
          text: `WITH done AS (
             UPDATE messages SET status = 'SENT', sent_at = now(), claimed_by = NULL, error_code = NULL, error_message = NULL
              WHERE id = ANY($1::text[]) AND status = 'SENDING' AND claimed_by = $2
              RETURNING messages AS message, account_id, job_id, priority, waygate_message_json(messages) AS event_data),
           counts AS (SELECT job_id, count(*)::int AS n FROM done WHERE job_id IS NOT NULL GROUP BY job_id),
           jobs AS (
             UPDATE bulk_jobs j SET sent_count = j.sent_count + c.n,
                    status = CASE WHEN ${JOB_DONE_AFTER('c.n')} THEN 'COMPLETED' ELSE j.status END,
                    completed_at = CASE WHEN ${JOB_DONE_AFTER('c.n')} THEN now() ELSE j.completed_at END
               FROM counts c WHERE j.id = c.job_id
             RETURNING j.account_id, j.completed_at = now()::timestamptz(3) AS just_completed, waygate_job_json(j) AS event_data),
           src AS (
             SELECT account_id, 'message.status' AS type, event_data AS data FROM done
             UNION ALL
             SELECT account_id, 'bulk_job.completed', event_data FROM jobs WHERE just_completed),
           ${appendEventsSql('src')}
           SELECT (message).* FROM done WHERE priority = 0`,
          values: [sent, this.workerId],
        });
      }
    } else {
      // Locks in the one order every writer uses: messages, then jobs, then the account (events last).
      await this.database.transaction(async (tx) => {
        const jobs = new Set<string>();
        const events: PendingEvent[] = [];
        if (sent.length > 0) {
          const done = await tx.query<{ job_id: string | null; account_id: string; event_data: unknown }>(
            `UPDATE messages SET status = 'SENT', sent_at = now(), claimed_by = NULL, error_code = NULL, error_message = NULL
              WHERE id = ANY($1::text[]) AND status = 'SENDING' AND claimed_by = $2
              RETURNING job_id, account_id, waygate_message_json(messages) AS event_data`,
            [sent, this.workerId],
          );
          for (const row of done) events.push({ accountId: row.account_id, type: 'message.status', data: row.event_data });
          const perJob = new Map<string, number>();
          for (const row of done) if (row.job_id) perJob.set(row.job_id, (perJob.get(row.job_id) ?? 0) + 1);
          await this.addJobCounts(tx, [...perJob].map(([job_id, n]) => ({ job_id, n })), 'sent_count', jobs);
        }
        if (failed.length > 0) events.push(...(await this.fail(tx, failed, jobs, 'claimed')));
        if (retry.length > 0) {
          await tx.query(
            `UPDATE messages m SET status = 'QUEUED', claimed_by = NULL, due_at = r.due_at, error_code = r.code, error_message = r.message
               FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[]) AS r(id, due_at, code, message)
              WHERE m.id = ANY($1::text[]) AND m.id = r.id AND m.status = 'SENDING' AND m.claimed_by = $5`,
            [retry.map((r) => r.id), retry.map((r) => r.dueAt), retry.map((r) => r.code), retry.map((r) => r.message), this.workerId],
          );
        }
        events.push(...(await completeJobs(tx, [...jobs], false)));
        await appendEvents(tx, events);
      });
    }
    return directRows;
  }

  /**
   * Ends messages FAILED, with refunds and job counters: `claimed` ones only while this worker
   * still holds them; `waiting` ones in any not-yet-final state (device logged out).
   */
  /** Returns the message.status events to append (last, after every job row is locked). */
  private async fail(tx: Queryable, failed: { id: string; code: string; message: string }[], jobs: Set<string>, which: 'claimed' | 'waiting'): Promise<PendingEvent[]> {
    const guard = which === 'claimed' ? `m.status = 'SENDING' AND m.claimed_by = $4` : `m.status IN ('SCHEDULED', 'QUEUED', 'SENDING') AND $4::text IS NOT NULL`;
    const rows = await tx.query<{ job_id: string | null; account_id: string; quota_period_start: Date | null; event_data: unknown }>(
      `UPDATE messages m SET status = 'FAILED', failed_at = now(), due_at = NULL, claimed_by = NULL, error_code = f.code, error_message = f.message
         FROM unnest($1::text[], $2::text[], $3::text[]) AS f(id, code, message)
        WHERE m.id = ANY($1::text[]) AND m.id = f.id AND ${guard}
        RETURNING m.job_id, m.account_id, m.quota_period_start, waygate_message_json(m) AS event_data`,
      [failed.map((f) => f.id), failed.map((f) => f.code), failed.map((f) => f.message), this.workerId],
    );
    await refundQuota(tx, rows.map((r) => ({ accountId: r.account_id, periodStart: r.quota_period_start, count: 1 })));
    const perJob = new Map<string, number>();
    for (const row of rows) if (row.job_id) perJob.set(row.job_id, (perJob.get(row.job_id) ?? 0) + 1);
    await this.addJobCounts(tx, [...perJob].map(([job_id, n]) => ({ job_id, n })), 'failed_count', jobs);
    return rows.map((r) => ({ accountId: r.account_id, type: 'message.status' as const, data: r.event_data }));
  }

  /** Fails every waiting or in-flight message of a device (logged out or removed). */
  async failDevice(deviceId: string, code: string, message: string): Promise<number> {
    return this.database.transaction(async (tx) => {
      const rows = await tx.query<{ id: string }>(
        `SELECT id FROM messages WHERE device_id = $1 AND status IN ('SCHEDULED', 'QUEUED', 'SENDING') FOR UPDATE`,
        [deviceId],
      );
      if (rows.length === 0) return 0;
      const jobs = new Set<string>();
      const events = await this.fail(tx, rows.map((r) => ({ id: r.id, code, message })), jobs, 'waiting');
      events.push(...(await completeJobs(tx, [...jobs], false)));
      await appendEvents(tx, events);
      this.wakeWebhooks();
      return rows.length;
    });
  }

  private async addJobCounts(tx: Queryable, counts: { job_id: string | null; n: number }[], column: 'sent_count' | 'failed_count', jobs: Set<string>): Promise<void> {
    const list = counts.filter((c): c is { job_id: string; n: number } => c.job_id !== null && c.n > 0);
    if (list.length === 0) return;
    await tx.query(
      `UPDATE bulk_jobs j SET ${column} = j.${column} + c.n FROM unnest($1::text[], $2::int[]) AS c(id, n) WHERE j.id = c.id`,
      [list.map((c) => c.job_id), list.map((c) => c.n)],
    );
    for (const c of list) jobs.add(c.job_id);
  }

  /**
   * Applies delivery and read receipts, forward only: a READ that overtakes DELIVERED lands READ
   * and stays there; a receipt for a message still SENDING also counts it as sent.
   */
  async applyReceipts(deviceId: string, receipts: Receipt[]): Promise<number> {
    if (receipts.length === 0) return 0;
    let changed = 0;
    for (const status of ['DELIVERED', 'READ'] as const) {
      const all = receipts.filter((r) => r.status === status);
      for (let start = 0; start < all.length; start += this.receiptBatch) {
        changed += await this.applyReceiptBatch(deviceId, status, all.slice(start, start + this.receiptBatch));
      }
    }
    this.wakeWebhooks();
    return changed;
  }

  private async applyReceiptBatch(deviceId: string, status: 'DELIVERED' | 'READ', subset: Receipt[]): Promise<number> {
    const from = status === 'DELIVERED' ? `('SENDING', 'SENT')` : `('SENDING', 'SENT', 'DELIVERED')`;
    // Timestamps never go backwards either: the network's receipt time may be earlier than the
    // sentAt this gateway stamped on its acknowledgement (clock granularity, a slow finalize).
    const set =
      status === 'DELIVERED'
        ? `status = 'DELIVERED', delivered_at = GREATEST(o.at, m.sent_at), sent_at = COALESCE(m.sent_at, o.at)`
        : `status = 'READ', read_at = GREATEST(o.at, m.delivered_at, m.sent_at), delivered_at = COALESCE(m.delivered_at, GREATEST(o.at, m.sent_at)),
           sent_at = COALESCE(m.sent_at, o.at)`;
    // One statement per receipt kind, committed on its own, taking its locks in the same order
    // as the send's outcome statement: messages, then their jobs, then the account (for the
    // event seq; the events depend on the job rows, so they are numbered after those are
    // locked). A consumer sees every step: a receipt that overtook SENT (or DELIVERED) also
    // writes the step it skipped, just before its own.
    const [row] = await this.database.query<{ changed: number }>(
      `WITH r AS (SELECT DISTINCT ON (nid) nid, at FROM unnest($2::text[], $3::timestamptz[]) AS r(nid, at) ORDER BY nid, at),
            o AS (SELECT x.id, x.status AS prev, r.at FROM r CROSS JOIN LATERAL (
                    SELECT m.id, m.status FROM messages m
                     WHERE m.device_id = $1 AND m.network_message_id = r.nid AND m.direction = 'out' AND m.status IN ${from}
                     FOR UPDATE) AS x),
            u AS (UPDATE messages m SET ${set}, claimed_by = NULL FROM o WHERE m.id = o.id
                  RETURNING m.job_id, m.account_id, o.prev, waygate_message_json(m) AS event_data),
            counts AS (
              SELECT job_id,
                     count(*) FILTER (WHERE prev = 'SENDING')::int AS sent,
                     count(*) FILTER (WHERE prev IN ('SENDING', 'SENT'))::int AS delivered,
                     ${status === 'READ' ? 'count(*)::int' : '0'} AS read
                FROM u WHERE job_id IS NOT NULL GROUP BY job_id),
            jobs AS (
              UPDATE bulk_jobs j SET sent_count = j.sent_count + c.sent, delivered_count = j.delivered_count + c.delivered,
                     read_count = j.read_count + c.read,
                     status = CASE WHEN ${JOB_DONE_AFTER('c.sent')} THEN 'COMPLETED' ELSE j.status END,
                     completed_at = CASE WHEN ${JOB_DONE_AFTER('c.sent')} THEN now() ELSE j.completed_at END
                FROM counts c WHERE j.id = c.job_id
              RETURNING j.account_id, j.completed_at = now()::timestamptz(3) AS just_completed, waygate_job_json(j) AS event_data),
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
            ${appendEventsSql('src')}
       SELECT (SELECT count(*)::int FROM u) AS changed`,
      [deviceId, subset.map((r) => r.networkMessageId), subset.map((r) => r.at), status],
    );
    messageTransitions.inc({ status: `${status}_RECEIPT` }, subset.length);
    return row?.changed ?? 0;
  }

  /** Stores an incoming message with its message.received event; a redelivery is ignored. */
  async storeIncoming(
    deviceId: string,
    incoming: {
      networkMessageId: string;
      from: string;
      fromLid?: string | undefined;
      type: MessageType;
      content: string;
      mediaUrl?: string | undefined;
      media?: IncomingMedia | undefined;
      at: Date;
    },
    id: string,
  ): Promise<boolean> {
    // Stored, with its message.received event, in one statement; only then does the session take the next one.
    const rows = await this.database.query(
      `WITH ins AS (
         INSERT INTO messages (id, account_id, device_id, direction, peer, peer_lid, type, content, media_url, media, status, network_message_id, received_at, created_at)
         SELECT $1, d.account_id, d.id, 'in', $3, $10, $4, $5, $6, $9::jsonb, 'RECEIVED', $7, $8, now() FROM devices d WHERE d.id = $2
         ON CONFLICT (device_id, network_message_id) DO NOTHING
         RETURNING id, account_id, waygate_message_json(messages) AS event_data),
       src AS (SELECT account_id, 'message.received' AS type, event_data AS data FROM ins),
       ${appendEventsSql('src')}
       SELECT id FROM ins`,
      [id, deviceId, incoming.from, incoming.type, incoming.content, incoming.mediaUrl ?? null, incoming.networkMessageId, incoming.at, incoming.media ? JSON.stringify(incoming.media) : null, incoming.fromLid ?? null],
    );
    if (rows.length > 0) this.wakeWebhooks();
    return rows.length > 0;
  }
}

/** SQL: true when job `j` is done once `added` more of its messages are final. */
const JOB_DONE_AFTER = (added: string): string =>
  `j.status = 'PROCESSING' AND j.fanned_out_at IS NOT NULL AND j.sent_count + j.failed_count + j.cancelled_count + ${added} >= j.total_contacts`;

/**
 * The one way messages become CANCELLED: those `where` picks (a condition on messages, its
 * parameters from $1) are CANCELLED, counted into their jobs and refunded. Returns how many, and
 * the jobs they belong to (which the caller may complete).
 */
export async function cancelMessages(tx: Queryable, where: string, params: unknown[]): Promise<{ count: number; jobIds: string[] }> {
  const rows = await tx.query<{ job_id: string | null; account_id: string; quota_period_start: Date | null; n: number }>(
    `WITH c AS (
       UPDATE messages SET status = 'CANCELLED', cancelled_at = now(), due_at = NULL, claimed_by = NULL
        WHERE ${where}
       RETURNING job_id, account_id, quota_period_start),
     counts AS (SELECT job_id, account_id, quota_period_start, count(*)::int AS n FROM c GROUP BY job_id, account_id, quota_period_start),
     jobs AS (
       UPDATE bulk_jobs j SET cancelled_count = j.cancelled_count + x.n
         FROM (SELECT job_id, sum(n)::int AS n FROM counts WHERE job_id IS NOT NULL GROUP BY job_id) x
        WHERE j.id = x.job_id
       RETURNING 1)
     SELECT job_id, account_id, quota_period_start, n FROM counts`,
    params,
  );
  await refundQuota(tx, rows.map((r) => ({ accountId: r.account_id, periodStart: r.quota_period_start, count: r.n })));
  const count = rows.reduce((sum, r) => sum + r.n, 0);
  if (count > 0) messageTransitions.inc({ status: 'CANCELLED' }, count);
  return { count, jobIds: [...new Set(rows.map((r) => r.job_id).filter((jobId): jobId is string => jobId !== null))] };
}

/**
 * Marks jobs COMPLETED once every message is final (sent or later, failed, or cancelled). A job
 * still SCHEDULED can be finished too: its messages may all end before their time (cancelled one
 * by one, or failed when the device was unlinked).
 */
/**
 * Marks jobs COMPLETED once every message is final, with their bulk_job.completed events:
 * appended here, or (emit = false) returned for the caller to append after its other events.
 */
export async function completeJobs(tx: Queryable, jobIds: string[], emit = true): Promise<PendingEvent[]> {
  if (jobIds.length === 0) return [];
  const rows = await tx.query<{ id: string; account_id: string; event_data: unknown }>(
    `UPDATE bulk_jobs SET status = 'COMPLETED', completed_at = now()
      WHERE id = ANY($1::text[]) AND status IN ('PROCESSING', 'SCHEDULED') AND fanned_out_at IS NOT NULL
        AND sent_count + failed_count + cancelled_count >= total_contacts
      RETURNING id, account_id, waygate_job_json(bulk_jobs) AS event_data`,
    [jobIds],
  );
  const events = rows.map((r) => ({ accountId: r.account_id, type: 'bulk_job.completed' as const, data: r.event_data }));
  if (!emit) return events;
  await appendEvents(tx, events);
  return [];
}
