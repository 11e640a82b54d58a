/**
 * Turns an accepted bulk job's frozen recipient list into messages, in chunks. Each chunk and
 * the job's cursor move in one transaction, so a crash resumes exactly where it stopped, and
 * no recipient is skipped or doubled. Node never holds the recipients: the SQL does the work.
 */
import type { Logger } from 'pino';
import type { Bus } from '../db/bus.js';
import type { Database } from '../db/client.js';
import { NETWORK_MESSAGE_ID_SQL } from '../domain/message-model.js';
import { completeJobs } from '../domain/message-queue.js';

const CHUNK = 10_000;
const IDLE_MS = 1_000;

export class BulkFanout {
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.stopped = false;
    this.unsubscribe = this.bus.subscribe('waygate_dispatch', (payload) => {
      if (payload === 'fanout') this.wakeUp?.();
    });
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.wakeUp?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let worked = false;
      try {
        worked = await this.fanOutChunk();
      } catch (error) {
        this.log.error({ err: error }, 'bulk fan-out failed; retrying');
      }
      if (!worked && !this.stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, IDLE_MS);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }

  /** Fans out one chunk of the oldest job that needs it; false when there was nothing to do. */
  async fanOutChunk(): Promise<boolean> {
    const device = await this.database.transaction(async (tx) => {
      const [job] = await tx.query<{ id: string; device_id: string; fanout_offset: number; total_contacts: number }>(
        `SELECT id, device_id, fanout_offset, total_contacts FROM bulk_jobs
          WHERE fanned_out_at IS NULL AND status IN ('PROCESSING', 'SCHEDULED')
          ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
      );
      if (!job) return undefined;
      const inserted = await tx.query<{ n: number }>(
        `WITH chunk AS (
           SELECT j.*, r.phone, $2::int + r.ord AS position
             FROM bulk_jobs j, unnest(j.recipients[$2::int + 1 : $2::int + $3::int]) WITH ORDINALITY AS r(phone, ord)
            WHERE j.id = $1),
         ins AS (
           INSERT INTO messages (id, account_id, device_id, job_id, direction, peer, type, content, media_url, status, priority,
                                 due_at, network_message_id, quota_period_start, scheduled_at)
           SELECT c.msg_id, c.account_id, c.device_id, c.id, 'out', c.phone, c.type, c.content, c.media_url,
                  CASE WHEN c.scheduled_at > now() THEN 'SCHEDULED' ELSE 'QUEUED' END, 1,
                  COALESCE(c.scheduled_at, now()), ${NETWORK_MESSAGE_ID_SQL('c.msg_id')}, c.quota_period_start, c.scheduled_at
             FROM (SELECT chunk.*, 'msg_' || substr(chunk.id, 5) || lpad(chunk.position::text, 7, '0') AS msg_id FROM chunk) c
           ON CONFLICT DO NOTHING
           RETURNING 1)
         SELECT count(*)::int AS n FROM ins`,
        [job.id, job.fanout_offset, CHUNK],
      );
      const offset = Math.min(job.total_contacts, job.fanout_offset + CHUNK);
      const done = offset >= job.total_contacts;
      await tx.query(
        `UPDATE bulk_jobs SET fanout_offset = $2, fanned_out_at = CASE WHEN $3 THEN now() END,
                recipients = CASE WHEN $3 THEN NULL ELSE recipients END WHERE id = $1`,
        [job.id, offset, done],
      );
      if (done) await completeJobs(tx, [job.id]);
      this.log.debug({ jobId: job.id, inserted: inserted[0]?.n, offset, total: job.total_contacts }, 'bulk fan-out chunk');
      await tx.query(`SELECT pg_notify('waygate_dispatch', $1)`, [job.device_id]);
      return job.device_id;
    });
    return device !== undefined;
  }
}
