/**
 * Turns an accepted bulk job's frozen recipient list into messages, in chunks (WorkBudget) that
 * several loops (in this process and in other workers) insert in parallel. A chunk's message ids
 * are fixed by its position in the list, so a chunk is done exactly when its first message
 * exists, and inserting it is one transaction: a crash leaves each chunk whole or absent, never
 * half, and a chunk is never inserted twice. Who inserts which chunk is settled by a
 * transaction-scoped advisory lock per (job, chunk). Each chunk transaction holds the job row
 * FOR KEY SHARE, so cancelling a job (FOR UPDATE) waits for the chunks in flight and no chunk starts
 * after it, while sends and receipts keep counting into the job. Node never holds the recipients:
 * the SQL (job-store.ts) does the work. A chunk is the largest batch of rows any statement adds
 * to messages, so its transaction also checks the table's statistics (table-statistics.ts).
 */
import type { Logger } from 'pino';
import type { Bus } from '../platform/bus.js';
import type { Database, Queryable } from '../platform/database.js';
import { analyseIfStale } from '../platform/table-statistics.js';
import { workBudget } from '../platform/work-budget.js';
import { WakeLoop } from '../platform/wake-loop.js';
import { wakeOwner } from './dispatch.js';
import * as jobs from './job-store.js';
import { existingIds } from './message-store.js';

const LOOPS = 2;
const IDLE_MS = 1_000;

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
    for (const job of await jobs.jobsToFanOut(this.database)) {
      const chunks = Math.ceil(job.total_contacts / this.chunkSize);
      const firstIds = Array.from({ length: chunks }, (_, k) => jobs.bulkMessageId(job.id, k * this.chunkSize + 1));
      const existing = await existingIds(this.database, firstIds);
      const missing = firstIds.map((id, k) => (existing.has(id) ? -1 : k)).filter((k) => k >= 0);
      if (missing.length === 0) {
        await this.finish(job.id);
        return true;
      }
      for (const chunk of missing) {
        // The only chunk missing (a chunk once in stays in): the job is fanned out in the same transaction.
        if (await this.insertChunk(job.id, chunk, missing.length === 1)) return true;
      }
    }
    return false;
  }

  /**
   * Inserts chunk `chunk` (0-based) of the job, unless it is taken, done, or the job stopped; true
   * if it did. `last`: every other chunk is in, so the job is fanned out with this one.
   */
  private async insertChunk(jobId: string, chunk: number, last: boolean): Promise<boolean> {
    const start = chunk * this.chunkSize;
    const result = await this.database.transaction(async (tx) => {
      const device = await jobs.holdJobChunk(tx, jobId, chunk);
      if (!device || (await existingIds(tx, [jobs.bulkMessageId(jobId, start + 1)])).size > 0) return undefined;
      const inserted = await jobs.insertChunkMessages(tx, jobId, start, this.chunkSize);
      const statistics = await analyseIfStale(tx, 'messages', inserted);
      if (last) await this.markDone(tx, jobId);
      return { device, inserted, statistics };
    });
    if (!result) return false;
    this.log.debug({ jobId, chunk, inserted: result.inserted }, 'bulk fan-out chunk');
    if (result.statistics !== 'fresh') this.log.info({ jobId, chunk, statistics: result.statistics }, "messages' statistics were of a table smaller than this chunk");
    wakeOwner(this.bus, result.device);
    return true;
  }

  /** Every chunk is in: the job is fanned out, its frozen list is dropped, and it may already be complete. */
  private async finish(jobId: string): Promise<void> {
    await this.database.transaction((tx) => this.markDone(tx, jobId));
  }

  private async markDone(tx: Queryable, jobId: string): Promise<void> {
    if (await jobs.markFannedOut(tx, jobId)) await jobs.completeJobs(tx, [jobId]);
  }
}
