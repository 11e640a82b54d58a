/**
 * Request rate limits (@fastify/rate-limit, fixed one-minute windows): RATE_LIMIT_PER_MINUTE per
 * account for requests with a valid token or session, RATE_LIMIT_ANONYMOUS_PER_MINUTE per client
 * address for everything else (no token, an invalid, expired or revoked one, no session, log-in
 * and sign-up). The hook runs after the credentials are read and before they are enforced, so a
 * 401 is counted and carries the RateLimit-* headers like any answer.
 *
 * Counted in the database on PostgreSQL (one upsert per request on an UNLOGGED table, so every
 * process shares the count), in memory on PGlite, where one process owns the database.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';

type StoreCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;

/** How often expired counters are swept from the table. */
const SWEEP_MS = 60_000;

/** The store interface of @fastify/rate-limit, on the rate_limit_hits table. */
export class DatabaseRateLimitStore {
  constructor(private readonly database: Database) {}

  incr(key: string, callback: StoreCallback, timeWindow: number): void {
    this.database
      .queryPrepared<{ hits: number; ttl_ms: number }>({
        name: 'rate_limit_incr',
        text: `INSERT INTO rate_limit_hits AS r (key, hits, resets_at) VALUES ($1, 1, clock_timestamp() + make_interval(secs => $2::float8 / 1000))
               ON CONFLICT (key) DO UPDATE SET
                 hits = CASE WHEN r.resets_at <= clock_timestamp() THEN 1 ELSE r.hits + 1 END,
                 resets_at = CASE WHEN r.resets_at <= clock_timestamp() THEN excluded.resets_at ELSE r.resets_at END
               RETURNING hits, greatest(0, ceil(extract(epoch FROM r.resets_at - clock_timestamp()) * 1000))::int AS ttl_ms`,
        values: [key, timeWindow],
        genericPlan: true,
      })
      .then(
        ([row]) => callback(null, { current: row!.hits, ttl: row!.ttl_ms }),
        (error: Error) => callback(error),
      );
  }

  child(): DatabaseRateLimitStore {
    return this;
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
  const shared = database.kind === 'postgres';
  if (shared) {
    const sweep = setInterval(() => {
      database.query('DELETE FROM rate_limit_hits WHERE resets_at < now()').catch(() => undefined);
    }, SWEEP_MS);
    sweep.unref();
    app.addHook('onClose', async () => clearInterval(sweep));
  }
  await app.register(rateLimit, {
    global: false,
    max: (_request, key) => maxOf(key),
    timeWindow: 60_000,
    enableDraftSpec: true,
    ...(shared ? { store: class extends DatabaseRateLimitStore { constructor() { super(database); } } } : {}),
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
