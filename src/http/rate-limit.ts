/**
 * Request rate limits (@fastify/rate-limit, fixed one-minute windows): RATE_LIMIT_PER_MINUTE per
 * account for requests with a valid token or session, RATE_LIMIT_ANONYMOUS_PER_MINUTE per client
 * address for everything else (no token, an invalid, expired or revoked one, no session, log-in
 * and sign-up). The hook runs after the credentials are read and before they are enforced, so a
 * 401 is counted and carries the RateLimit-* headers like any answer.
 *
 * Counted in the database on PostgreSQL (an UNLOGGED table every process writes its counts to,
 * see DatabaseRateLimitStore), in memory on PGlite, where one process owns the database.
 * DatabaseRateLimitStore is the one home of the statements on rate_limit_hits: the table is this
 * limiter's alone, and its batching (when to write) and its statements belong together.
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { Config } from '../config.js';
import type { Database } from '../platform/database.js';
import { AppError } from '../platform/errors.js';

type StoreCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;

const WINDOW_MS = 60_000;

/** How often expired counters are swept from the table and from memory. */
const SWEEP_MS = 60_000;
/**
 * Below the exact zone, a process writes its count at least this often (a timer), and never
 * judges on a shared count older than this (it writes and reads again first).
 */
export const RATE_SYNC_MS = 250;
/** A process also writes once it has this share of the limit unwritten. */
const BATCH_SHARE = 0.02;
/** From this share of the limit on, every request is counted in the database before it is judged. */
const EXACT_FROM = 0.8;
/** Counters kept in memory at most (each is a key seen this minute). */
const MAX_LOCAL_KEYS = 50_000;

interface LocalCount {
  /** The shared count as of the last write to the database. */
  shared: number;
  /** This process's requests not yet written. */
  pending: number;
  /** This process's requests being written now. */
  writing: number;
  resetsAt: number;
  syncedAt: number;
  syncing: boolean;
}

/**
 * The store interface of @fastify/rate-limit, on the rate_limit_hits table, shared by every
 * process. Writing each request would serialise all of an account's requests on one row (about
 * 5,000 a second at most, 3 ms each at 16 in parallel), so a process writes its count in batches:
 * the first request of a window, whenever 2% of the limit is unwritten, every 250 ms (a timer),
 * before judging on a shared count older than that, and for every request once the count reaches
 * 80% of the limit. From there each decision is made on the database's own count, so the limit
 * holds across processes to within the requests in flight; below it, a process's view lags the
 * others' by at most 250 ms.
 */
export class DatabaseRateLimitStore {
  private readonly counts = new Map<string, LocalCount>();

  constructor(
    private readonly database: Database,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Adds `hits` to the shared count of `key` and returns it, with the ms left in its window. */
  private async add(key: string, hits: number, timeWindow: number): Promise<{ hits: number; ttlMs: number }> {
    const [row] = await this.database.queryPrepared<{ hits: number; ttl_ms: number }>({
      name: 'rate_limit_add',
      text: `INSERT INTO rate_limit_hits AS r (key, hits, resets_at) VALUES ($1, $3, clock_timestamp() + make_interval(secs => $2::float8 / 1000))
             ON CONFLICT (key) DO UPDATE SET
               hits = CASE WHEN r.resets_at <= clock_timestamp() THEN $3 ELSE r.hits + $3 END,
               resets_at = CASE WHEN r.resets_at <= clock_timestamp() THEN excluded.resets_at ELSE r.resets_at END
             RETURNING hits, greatest(0, ceil(extract(epoch FROM r.resets_at - clock_timestamp()) * 1000))::int AS ttl_ms`,
      values: [key, timeWindow, hits],
      genericPlan: true,
    });
    return { hits: row!.hits, ttlMs: row!.ttl_ms };
  }

  /** Writes the pending count; resolves to the shared count right after this write (it includes them). */
  private async sync(key: string, entry: LocalCount, timeWindow: number): Promise<number> {
    const count = entry.pending;
    entry.pending = 0;
    entry.writing += count;
    entry.syncing = true;
    try {
      const { hits, ttlMs } = await this.add(key, count, timeWindow);
      // Answers of parallel writes may arrive out of order: within a window the count only grows.
      entry.shared = hits <= count ? hits : Math.max(entry.shared, hits);
      entry.resetsAt = Date.now() + ttlMs;
      entry.syncedAt = Date.now();
      return hits;
    } catch (error) {
      entry.pending += count;
      throw error;
    } finally {
      entry.writing -= count;
      entry.syncing = false;
    }
  }

  incr(key: string, callback: StoreCallback, timeWindow: number, max: number): void {
    const now = Date.now();
    let entry = this.counts.get(key);
    if (!entry || entry.resetsAt <= now) {
      if (this.counts.size >= MAX_LOCAL_KEYS) this.sweep(now);
      entry = { shared: 0, pending: 0, writing: 0, resetsAt: now + timeWindow, syncedAt: 0, syncing: false };
      this.counts.set(key, entry);
    }
    entry.pending++;
    const local = entry;
    const count = (): number => local.shared + local.writing + local.pending;
    const answer = (current: number): void => callback(null, { current, ttl: Math.max(0, local.resetsAt - Date.now()) });
    const stale = now - local.syncedAt >= RATE_SYNC_MS;
    if (stale || count() >= max * EXACT_FROM) {
      // Judged on the database's count right after this request's own write: requests written
      // before it are in it, later ones are not.
      this.sync(key, local, timeWindow).then(answer, (error: Error) => {
        // The limiter lets the request through (skipOnError): say so, or the limit lapses unseen.
        // (A background write that fails loses nothing: its count is written with the next one.)
        this.log.warn({ err: error, key }, 'could not count a request against its rate limit; it was let through');
        callback(error);
      });
      return;
    }
    if (!local.syncing && local.pending >= Math.max(1, Math.floor(max * BATCH_SHARE))) this.sync(key, local, timeWindow).catch(() => undefined);
    answer(count());
  }

  /** Writes every count with requests not yet written (the timer's work). */
  flush(timeWindow: number): void {
    for (const [key, entry] of this.counts) {
      if (entry.pending > 0 && !entry.syncing) this.sync(key, entry, timeWindow).catch(() => undefined);
    }
  }

  child(): DatabaseRateLimitStore {
    return this;
  }

  /** Forgets counters whose window is over (or all of them, past the cap: the database keeps the counts). */
  sweep(now = Date.now()): void {
    for (const [key, entry] of this.counts) if (entry.resetsAt <= now) this.counts.delete(key);
    if (this.counts.size >= MAX_LOCAL_KEYS) this.counts.clear();
  }

  /** Deletes the shared counters whose window is over. */
  async deleteExpired(): Promise<void> {
    await this.database.query('DELETE FROM rate_limit_hits WHERE resets_at < now()');
  }
}

/** The key a request is counted under: its account once authenticated, else its client address. */
export function rateLimitKey(request: FastifyRequest): string {
  return request.auth ? `account:${request.auth.accountId}` : `address:${request.ip}`;
}

/**
 * Registers the limiter and returns its onRequest hook, to be added after the hook that reads the
 * credentials (request.auth) and before the one that refuses bad ones; undefined when both limits are off.
 */
export async function installRateLimit(app: FastifyInstance, config: Config, database: Database): Promise<onRequestHookHandler | undefined> {
  const perAccount = config.rateLimitPerMinute;
  const perAddress = config.anonymousRateLimitPerMinute;
  if (perAccount === 0 && perAddress === 0) return undefined;
  const maxOf = (key: string): number => (key.startsWith('account:') ? perAccount : perAddress);
  const store = database.kind === 'postgres' ? new DatabaseRateLimitStore(database, app.log) : undefined;
  if (store) {
    const flush = setInterval(() => store.flush(WINDOW_MS), RATE_SYNC_MS);
    const sweep = setInterval(() => {
      store.sweep();
      store.deleteExpired().catch(() => undefined);
    }, SWEEP_MS);
    flush.unref();
    sweep.unref();
    // Counts not yet written when the app closes are dropped: at most 250 ms of requests.
    app.addHook('onClose', async () => {
      clearInterval(flush);
      clearInterval(sweep);
    });
  }
  await app.register(rateLimit, {
    global: false,
    max: (_request, key) => maxOf(key),
    timeWindow: WINDOW_MS,
    enableDraftSpec: true,
    // The plugin constructs its store itself; this hands it the one made above.
    ...(store ? { store: function SharedStore() { return store; } as unknown as new () => DatabaseRateLimitStore } : {}),
    // A limit of 0 is off for that kind of key.
    allowList: (_request, key) => maxOf(key) === 0,
    // The limiter's database being unreachable must not turn every request into an error.
    skipOnError: true,
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (_request, context) =>
      new AppError('RATE_LIMITED', `Too many requests: the limit is ${context.max} per minute; retry in ${Math.ceil(context.ttl / 1000)} s`, {
        limit: context.max,
        retryAfterSeconds: Math.ceil(context.ttl / 1000),
      }),
  });
  return app.rateLimit();
}
