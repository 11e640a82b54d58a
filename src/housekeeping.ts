/**
 * What the worker role prunes, and when: expired idempotency keys, events past
 * EVENT_RETENTION_DAYS (with their deliveries), delivery attempts past
 * WEBHOOK_ATTEMPT_RETENTION_DAYS, media files past MEDIA_RETENTION_DAYS (media-store.ts), the
 * bodies of settled messages past MESSAGE_BODY_RETENTION_DAYS (when set), requests to devices
 * left unserved for a day and number look-ups past their 7 days
 * (src/conversations/device-requests.ts). Each statement takes one bounded batch (work-budget.ts)
 * and the loop pauses between batches, so a large backlog of expired rows is worked off in small pieces
 * beside live traffic, never in one long statement. Several workers may prune at once: each
 * batch is a statement of its own, and a row deleted twice is simply not found.
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './platform/database.js';
import { WakeLoop } from './platform/wake-loop.js';
import { workBudget } from './platform/work-budget.js';
import { deleteExpiredEvents } from './events/event-store.js';
import { deleteExpiredAttempts } from './events/webhook-store.js';
import { IdempotencyService } from './messaging/idempotency.js';
import { pruneMessageBodies } from './messaging/message-store.js';
import { pruneExpiredMedia } from './media/media-store.js';
import { deleteStale } from './conversations/device-requests.js';

/** How often the worker looks for expired rows when the last look found none to spare. */
const IDLE_MS = 10 * 60_000;
/**
 * The pause after a full pass: at least this long, and at least as long as the pass took, so a
 * backlog never takes more than half of the time of the connection it runs on (and the CPU and
 * WAL that go with it): traffic keeps the database between batches however slow a batch is.
 */
const BETWEEN_BATCHES_MS = 100;
const pauseAfter = (passMs: number): number => Math.max(BETWEEN_BATCHES_MS, Math.round(passMs));
const DAY_MS = 86_400_000;

/** What one pass pruned, and whether any batch was full (more may be left). */
export interface PrunePass {
  events: number;
  attempts: number;
  idempotencyKeys: number;
  media: number;
  messageBodies: number;
  deviceRequests: number;
  full: boolean;
}

export class Housekeeping {
  private readonly loop: WakeLoop;
  private readonly idempotency: IdempotencyService;
  private readonly batch: number;
  private readonly mediaBytes: number;

  constructor(
    private readonly database: Database,
    private readonly config: Pick<Config, 'eventRetentionDays' | 'attemptRetentionDays' | 'mediaRetentionDays' | 'messageBodyRetentionDays'>,
    log: Logger,
  ) {
    this.idempotency = new IdempotencyService(database);
    ({ pruneBatch: this.batch, pruneMediaBytes: this.mediaBytes } = workBudget(database));
    this.loop = new WakeLoop(() => this.turn(), { name: 'housekeeping', log, errorBackoffMs: 60_000 });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One batch of each kind; how many rows went. Exposed for tests. */
  async pruneOnce(): Promise<PrunePass> {
    const idempotencyKeys = await this.idempotency.purgeExpired();
    const events = await deleteExpiredEvents(this.database, this.config.eventRetentionDays, this.batch);
    const attempts = await deleteExpiredAttempts(this.database, this.config.attemptRetentionDays, this.batch);
    const media = await pruneExpiredMedia(this.database, this.config.mediaRetentionDays, this.batch, this.mediaBytes);
    const days = this.config.messageBodyRetentionDays;
    const bodies = days > 0 ? await pruneMessageBodies(this.database, new Date(Date.now() - days * DAY_MS), this.batch) : { scanned: 0, pruned: 0 };
    const deviceRequests = await deleteStale(this.database, this.batch);
    // A media batch may end early on its byte budget: any file pruned means there may be more.
    const full = events >= this.batch || attempts >= this.batch || media > 0 || bodies.scanned >= this.batch || deviceRequests >= this.batch;
    return { events, attempts, idempotencyKeys, media, messageBodies: bodies.pruned, deviceRequests, full };
  }

  /**
   * Prunes until a pass finds less than a batch of anything, pausing after each full pass as the
   * loop does; what went, summed, and how many passes it took. For benchmarks and tests.
   */
  async drain(): Promise<{ events: number; attempts: number; media: number; messageBodies: number; deviceRequests: number; passes: number }> {
    const total = { events: 0, attempts: 0, media: 0, messageBodies: 0, deviceRequests: 0, passes: 0 };
    for (;;) {
      const { pass, pauseMs } = await this.timedPass();
      total.events += pass.events;
      total.attempts += pass.attempts;
      total.media += pass.media;
      total.messageBodies += pass.messageBodies;
      total.deviceRequests += pass.deviceRequests;
      total.passes++;
      if (pauseMs === undefined) return total;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  private async turn(): Promise<number> {
    return (await this.timedPass()).pauseMs ?? IDLE_MS;
  }

  /** One pass, and the pause before the next: after a full pass, pauseAfter its duration; none (undefined) when nothing is left to spare. */
  private async timedPass(): Promise<{ pass: PrunePass; pauseMs: number | undefined }> {
    const started = performance.now();
    const pass = await this.pruneOnce();
    return { pass, pauseMs: pass.full ? pauseAfter(performance.now() - started) : undefined };
  }
}
