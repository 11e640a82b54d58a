/**
 * Turns an accepted bulk job's frozen recipient list into messages, in chunks (WorkBudget) that
 * several loops (in this process and in other workers) insert in parallel. A chunk's message ids
 * are fixed by its position in the list, so a chunk is done exactly when its first message
 * exists, and inserting it is one transaction: a crash leaves each chunk whole or absent, never
 * half, and a chunk is never inserted twice. Who inserts which chunk is settled by a
 * transaction-scoped advisory lock per (job, chunk). Each chunk transaction holds the job row
 * FOR KEY SHARE, so cancelling a job (FOR UPDATE) waits for the chunks in flight and no chunk starts
 * after it, while sends and receipts keep counting into the job. Node never holds the recipients: the SQL does the work.
 */
import type { Logger } from 'pino';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import { NETWORK_MESSAGE_ID_SQL } from './message-model.js';
import { completeJobs } from './message-queue.js';
import { workBudget } from '../platform/work-budget.js';
import { WakeLoop } from '../platform/wake-loop.js';

const LOOPS = 2;
const IDLE_MS = 1_000;

/** The id of the message at 1-based `position` of job `jobId`'s recipient list (SQL and JS agree). */
export const bulkMessageIdSql = (jobIdSql: string, positionSql: string): string => `'msg_' || substr(${jobIdSql}, 5) || lpad((${positionSql})::text, 7, '0')`;
export const bulkMessageId = (jobId: string, position: number): string => `msg_${jobId.slice(4)}${String(position).padStart(7, '0')}`;

export class BulkFanout {
  private readonly loops: WakeLoop[];
  private readonly chunkSize: number;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly log: Logger,
  ) {
    this.chunkSize = workBudget(database).fanoutChunk;
    this.loops = Array.from({ length: LOOPS }, () => new WakeLoop(async () => ((await this.step()) ? 0 : IDLE_MS), { name: 'bulk fan-out', log }));
  }

  start(): void {
    this.unsubscribe = this.bus.subscribe('waygate_dispatch', (payload) => {
      if (payload === 'fanout') for (const loop of this.loops) loop.wake();
    });
    for (const loop of this.loops) loop.start();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }

  /** Inserts one chunk of the oldest job that needs one, or finishes a job whose chunks are all in; false when there was nothing to do. */
  async step(): Promise<boolean> {
    const jobs = await this.database.query<{ id: string; total_contacts: number }>(
      `SELECT id, total_contacts FROM bulk_jobs WHERE fanned_out_at IS NULL AND status IN ('PROCESSING', 'SCHEDULED') ORDER BY created_at LIMIT 10`,
    );
    for (const job of jobs) {
      const chunks = Math.ceil(job.total_contacts / this.chunkSize);
      const firstIds = Array.from({ length: chunks }, (_, k) => bulkMessageId(job.id, k * this.chunkSize + 1));
      const existing = new Set(
        (await this.database.query<{ id: string }>('SELECT id FROM messages WHERE id = ANY($1::text[])', [firstIds])).map((row) => row.id),
      );
      const missing = firstIds.map((id, k) => (existing.has(id) ? -1 : k)).filter((k) => k >= 0);
      if (missing.length === 0) {
        await this.finish(job.id);
        return true;
      }
      for (const chunk of missing) {
        if (await this.insertChunk(job.id, chunk)) return true;
      }
    }
    return false;
  }

  /** Inserts chunk `chunk` (0-based) of the job, unless it is taken, done, or the job stopped; true if it did. */
  private async insertChunk(jobId: string, chunk: number): Promise<boolean> {
    const result = await this.database.transaction(async (tx) => {
      const [job] = await tx.query<{ status: string; device_id: string }>(
        // KEY SHARE, not SHARE: the counter updates of sends and receipts (no key change) go on
        // while a chunk is inserted; a cancel (FOR UPDATE) still waits for the chunk, and a chunk
        // that waited for a cancel sees the job CANCELLED.
        `SELECT status, device_id FROM bulk_jobs WHERE id = $1 AND fanned_out_at IS NULL FOR KEY SHARE`,
        [jobId],
      );
      if (!job || (job.status !== 'PROCESSING' && job.status !== 'SCHEDULED')) return undefined;
      const [lock] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1), $2) AS locked', [jobId, chunk]);
      if (!lock?.locked) return undefined;
      const start = chunk * this.chunkSize;
      const [done] = await tx.query('SELECT 1 FROM messages WHERE id = $1', [bulkMessageId(jobId, start + 1)]);
      if (done) return undefined;
      const [inserted] = await tx.query<{ n: number }>(
        `WITH chunk AS (
           SELECT j.id, j.account_id, j.device_id, j.type, j.content, j.media_url, j.scheduled_at, j.quota_period_start, r.phone,
                  ${bulkMessageIdSql('j.id', '$2::int + r.ord')} AS msg_id
             FROM bulk_jobs j, unnest(j.recipients[$2::int + 1 : $2::int + $3::int]) WITH ORDINALITY AS r(phone, ord)
            WHERE j.id = $1),
         ins AS (
           INSERT INTO messages (id, account_id, device_id, job_id, direction, peer, type, content, media_url, status, priority,
                                 due_at, network_message_id, quota_period_start, scheduled_at)
           SELECT c.msg_id, c.account_id, c.device_id, c.id, 'out', c.phone, c.type, c.content, c.media_url,
                  CASE WHEN c.scheduled_at > now() THEN 'SCHEDULED' ELSE 'QUEUED' END, 1,
                  COALESCE(c.scheduled_at, now()), ${NETWORK_MESSAGE_ID_SQL('c.msg_id')}, c.quota_period_start, c.scheduled_at
             FROM chunk c
           RETURNING 1)
         SELECT count(*)::int AS n FROM ins`,
        [jobId, start, this.chunkSize],
      );
      return { device: job.device_id, inserted: inserted?.n ?? 0 };
    });
    if (!result) return false;
    this.log.debug({ jobId, chunk, inserted: result.inserted }, 'bulk fan-out chunk');
    this.bus.local('waygate_dispatch', result.device);
    this.bus.publishSoon('waygate_dispatch', result.device);
    return true;
  }

  /** Every chunk is in: the job is fanned out, its frozen list is dropped, and it may already be complete. */
  private async finish(jobId: string): Promise<void> {
    await this.database.transaction(async (tx) => {
      const finished = await tx.query(
        `UPDATE bulk_jobs SET fanned_out_at = now(), recipients = NULL WHERE id = $1 AND fanned_out_at IS NULL RETURNING id`,
        [jobId],
      );
      if (finished.length > 0) await completeJobs(tx, [jobId]);
    });
  }
}
