/**
 * Delivers webhooks from the outbox (webhook_deliveries), per the Standard Webhooks spec:
 * POST with webhook-id (the event id, the same on every retry), webhook-timestamp and
 * webhook-signature (both secrets during a rotation). 2xx is success; 410 Gone fails the
 * delivery and turns the endpoint off; anything else (3xx included, timeouts after
 * WEBHOOK_TIMEOUT_MS, 15 s by default, refused connections) is retried on WEBHOOK_RETRY_SCHEDULE, later if the endpoint asks so with
 * Retry-After. Every attempt is recorded.
 *
 * Claims are leases (claimed_until, twice the timeout), so a worker killed mid-delivery only
 * delays its deliveries: another worker sends them again after the lease (at least once;
 * receivers de-duplicate by webhook-id). The worker takes at most a few deliveries of each endpoint at a time and never
 * waits on one endpoint to serve another, so a slow or dead endpoint cannot hold up the rest.
 *
 * Bounded by construction: deliveries claimed and not yet recorded (in flight, or finished and
 * waiting for the next write) never exceed `total`, so a backlog whose every attempt fails at once
 * (a refused private address) is worked through `total` at a time, each batch recorded before the
 * next is claimed, between turns of the event loop (WakeLoop). Within an endpoint, first attempts
 * and retries are claimed in turn, so a fresh event never waits behind the endpoint's backlog.
 */
import type { Logger } from 'pino';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import { webhookAttempts } from '../platform/metrics.js';
import { WakeLoop } from '../platform/wake-loop.js';
import { webhookHeaders } from '../outbound/standard-webhooks.js';
import { type GuardedHttp, unsafeCause } from '../outbound/ssrf.js';

export interface WebhookDeliveryOptions {
  retryScheduleMs: number[];
  workerId: string;
  /** Per attempt (default 15 s); a claim is leased for twice this. */
  timeoutMs?: number;
  /** In-flight requests per endpoint, and in all. */
  perEndpoint?: number;
  total?: number;
}

const IDLE_POLL_MS = 50;
/** On stop, requests in flight get this long to finish; the rest are abandoned and released for the next worker. */
const STOP_GRACE_MS = 2_000;
const EXCERPT_CHARS = 1000;
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

interface Claimed {
  id: string;
  endpoint_id: string;
  attempts: number;
  event_id: string;
  /** Null for webhook.test events. */
  seq: number | null;
  type: string;
  /** The event's data as JSON text (jsonb output), put in the body as it is: no parse and re-serialise per attempt. */
  data: string;
  created_at: Date;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_valid: boolean;
}

interface Outcome {
  id: string;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  attempts: number;
  nextAttemptAt: Date | null;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  excerpt: string | null;
  attemptedAt: Date;
  gone: string | null;
}

/** Retry-After as milliseconds from now: seconds, or an HTTP date. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export class WebhookDelivery {
  private readonly loop: WakeLoop;
  private readonly inflight = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  /** Aborts the requests still in flight when stop()'s grace runs out. */
  private readonly abandon = new AbortController();
  private outcomes: Outcome[] = [];
  /** Deliveries whose request was abandoned by stop(): released unrecorded, for the next worker. */
  private readonly abandoned: string[] = [];
  private flushing: Promise<void> | undefined;
  private endpointsActive = false;
  private endpointsKnownUntil = 0;
  private unsubscribe: (() => void) | undefined;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly perEndpoint: number;
  private readonly total: number;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly http: GuardedHttp,
    private readonly log: Logger,
    private readonly options: WebhookDeliveryOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 15_000;
    // Outlives an attempt (timeout) and the wait for its outcome to be written.
    this.leaseMs = Math.max(1_000, this.timeoutMs * 2);
    this.perEndpoint = options.perEndpoint ?? 32;
    this.total = options.total ?? 256;
    this.loop = new WakeLoop(() => this.turn(), { name: 'webhook delivery', log });
  }

  start(): void {
    this.unsubscribe = this.bus.subscribe('waygate_webhooks', (payload) => {
      if (payload === 'endpoints') this.endpointsKnownUntil = 0;
      this.loop.wake();
    });
    this.loop.start();
  }

  /**
   * Stops claiming and records what is in flight. Requests get STOP_GRACE_MS to finish; the rest
   * are aborted and their claims released, so the next worker sends them at once (at least once).
   */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.loop.stop();
    const settled = Promise.all(this.running);
    const grace = new Promise<'late'>((resolve) => setTimeout(resolve, STOP_GRACE_MS, 'late').unref());
    if ((await Promise.race([settled, grace])) === 'late') {
      this.abandon.abort();
      await settled;
    }
    await this.flush();
    if (this.abandoned.length > 0) {
      await this.database
        .query('UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = NULL WHERE id = ANY($1::text[]) AND claimed_by = $2', [
          this.abandoned,
          this.options.workerId,
        ])
        .catch((error: unknown) => this.log.warn({ err: error }, 'releasing abandoned webhook deliveries failed; their claims run out instead'));
    }
  }

  private inFlightTotal(): number {
    let sum = 0;
    for (const n of this.inflight.values()) sum += n;
    return sum;
  }

  /** One turn: record finished attempts, then claim as many as the bound leaves room for. */
  private async turn(): Promise<number> {
    if (this.outcomes.length > 0) await this.flush();
    const room = this.total - this.inFlightTotal() - this.outcomes.length;
    if (room <= 0 || !(await this.anyActiveEndpoint())) return IDLE_POLL_MS;
    const claimed = await this.claim(room);
    for (const delivery of claimed) this.launch(delivery);
    return claimed.length > 0 ? 0 : IDLE_POLL_MS;
  }

  /**
   * Whether any endpoint is active (in any account). Without one there is nothing to claim, and
   * the claim query is skipped: it used to run 20 times a second and after every batch of events,
   * which cost a direct send's worth of database round trips. Known for 1 s when false (an
   * endpoint created in any process says so at once: NOTIFY 'endpoints'), 5 s when true.
   */
  private async anyActiveEndpoint(): Promise<boolean> {
    if (Date.now() < this.endpointsKnownUntil) return this.endpointsActive;
    const [row] = await this.database.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE active) AS any');
    this.endpointsActive = row?.any ?? false;
    this.endpointsKnownUntil = Date.now() + (this.endpointsActive ? 5_000 : 1_000);
    return this.endpointsActive;
  }

  /**
   * Claims up to `limit` due deliveries, each endpoint as many as it has room for (perEndpoint
   * minus its requests in flight), taking its first attempts and its retries in turn.
   */
  private async claim(limit: number): Promise<Claimed[]> {
    const held = [...this.inflight];
    const due = (attempts: string) =>
      `SELECT id FROM webhook_deliveries
        WHERE endpoint_id = eps.id AND status = 'PENDING' AND ${attempts} AND next_attempt_at <= now()
          AND (claimed_until IS NULL OR claimed_until < now())
        ORDER BY next_attempt_at LIMIT eps.room FOR UPDATE SKIP LOCKED`;
    return this.database.query<Claimed>(
      `WITH eps AS (
         SELECT w.id, $3 - COALESCE(f.n, 0) AS room FROM webhook_endpoints w
           LEFT JOIN unnest($2::text[], $6::int[]) AS f(id, n) ON f.id = w.id
          WHERE w.active AND $3 - COALESCE(f.n, 0) > 0),
       picked AS (
         SELECT d.id FROM eps CROSS JOIN LATERAL (
           SELECT id FROM (
             SELECT id, row_number() OVER () AS turn FROM (${due('attempts = 0')}) fresh
             UNION ALL
             SELECT id, row_number() OVER () AS turn FROM (${due('attempts > 0')}) retry) both_kinds
            ORDER BY turn LIMIT eps.room) AS d
         LIMIT $4)
       UPDATE webhook_deliveries d SET claimed_by = $1, claimed_until = now() + $5 * interval '1 millisecond'
         FROM picked p, events e, webhook_endpoints w
        WHERE d.id = p.id AND e.id = d.event_id AND w.id = d.endpoint_id
       RETURNING d.id, d.endpoint_id, d.attempts, e.id AS event_id, e.seq, e.type, e.data::text AS data, e.created_at,
                 w.url, w.secret, w.previous_secret, (w.previous_secret_expires_at > now()) AS previous_valid`,
      [this.options.workerId, held.map(([id]) => id), this.perEndpoint, limit, this.leaseMs, held.map(([, n]) => n)],
    );
  }

  private launch(delivery: Claimed): void {
    this.inflight.set(delivery.endpoint_id, (this.inflight.get(delivery.endpoint_id) ?? 0) + 1);
    const task = this.attempt(delivery)
      .then((outcome) => {
        if (!outcome) {
          this.abandoned.push(delivery.id);
          return;
        }
        this.outcomes.push(outcome);
        this.scheduleFlush();
      })
      .catch((error: unknown) => this.log.error({ err: error, deliveryId: delivery.id }, 'webhook attempt failed unexpectedly'))
      .finally(() => {
        const left = (this.inflight.get(delivery.endpoint_id) ?? 1) - 1;
        if (left <= 0) this.inflight.delete(delivery.endpoint_id);
        else this.inflight.set(delivery.endpoint_id, left);
        this.running.delete(task);
        // Claim again once the endpoint has room for a batch (half its slots), not after every
        // attempt: one claim statement per few deliveries instead of one per delivery.
        if (left <= this.perEndpoint / 2) this.loop.wake();
      });
    this.running.add(task);
  }

  /** One attempt and its outcome; undefined when stop() abandoned it (not an attempt the endpoint failed). */
  private async attempt(delivery: Claimed): Promise<Outcome | undefined> {
    const seq = delivery.seq === null ? 'null' : String(Number(delivery.seq));
    const body = `{"type":${JSON.stringify(delivery.type)},"timestamp":"${delivery.created_at.toISOString()}","seq":${seq},"data":${delivery.data}}`;
    const secrets = delivery.previous_secret && delivery.previous_valid ? [delivery.secret, delivery.previous_secret] : [delivery.secret];
    const attemptedAt = new Date();
    const headers = webhookHeaders({ id: delivery.event_id, timestamp: attemptedAt, body, secrets });
    const started = performance.now();
    const attempts = delivery.attempts + 1;
    let statusCode: number | null = null;
    let excerpt: string | null = null;
    let error: string | null = null;
    let retryAfter: number | undefined;
    try {
      const response = await this.http.request(delivery.url, {
        method: 'POST',
        headers: { ...headers, 'user-agent': 'Waygate-Webhooks/1.0' },
        body,
        timeoutMs: this.timeoutMs,
        allowPrivate: this.http.allowPrivate,
        signal: this.abandon.signal,
      });
      statusCode = response.status;
      retryAfter = retryAfterMs(response.headers.get('retry-after'));
      excerpt = await readExcerpt(response.body);
    } catch (caught) {
      if (this.abandon.signal.aborted) return undefined;
      const unsafe = unsafeCause(caught);
      const message = unsafe ? unsafe.message : caught instanceof Error ? describeError(caught, this.timeoutMs) : String(caught);
      error = message;
    }
    const latencyMs = Math.round(performance.now() - started);
    const base = { id: delivery.id, attempts, statusCode, error, latencyMs, excerpt, attemptedAt };
    if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
      webhookAttempts.inc({ result: 'delivered' });
      return { ...base, status: 'SUCCEEDED', nextAttemptAt: null, gone: null };
    }
    if (statusCode === 410) {
      webhookAttempts.inc({ result: 'gone' });
      return { ...base, status: 'FAILED', nextAttemptAt: null, error: 'The endpoint answered 410 Gone; it was turned off', gone: delivery.endpoint_id };
    }
    webhookAttempts.inc({ result: statusCode === null ? 'error' : 'failed' });
    const schedule = this.options.retryScheduleMs;
    if (attempts >= schedule.length) {
      return { ...base, status: 'FAILED', nextAttemptAt: null, error: error ?? `HTTP ${statusCode} (gave up after ${attempts} attempts)`, gone: null };
    }
    const delay = Math.min(MAX_RETRY_AFTER_MS, Math.max(schedule[attempts]!, retryAfter ?? 0));
    return { ...base, status: 'PENDING', nextAttemptAt: new Date(Date.now() + delay), error: error ?? `HTTP ${statusCode}`, gone: null };
  }

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush()).finally(() => {
      this.flushing = undefined;
      if (this.outcomes.length > 0) this.scheduleFlush();
    });
  }

  /** Records a batch of outcomes in one statement: deliveries, attempts, endpoints turned off by a 410. */
  private async flush(): Promise<void> {
    const batch = this.outcomes;
    this.outcomes = [];
    if (batch.length === 0) return;
    try {
      await this.database.query(
        `WITH o AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::text[], $7::int[], $8::text[], $9::timestamptz[])
             AS o(id, status, attempts, next_attempt_at, status_code, error, latency_ms, excerpt, attempted_at)),
         upd AS (
           UPDATE webhook_deliveries d SET status = o.status, attempts = o.attempts, next_attempt_at = o.next_attempt_at,
                  last_status_code = o.status_code, last_error = CASE WHEN o.status = 'SUCCEEDED' THEN NULL ELSE o.error END,
                  delivered_at = CASE WHEN o.status = 'SUCCEEDED' THEN o.attempted_at ELSE d.delivered_at END,
                  claimed_by = NULL, claimed_until = NULL
             FROM o WHERE d.id = o.id AND d.claimed_by = $10
           RETURNING d.id),
         attempts AS (
           INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_excerpt, error)
           SELECT o.id, o.attempted_at, o.status_code, o.latency_ms, o.excerpt, o.error FROM o JOIN upd ON upd.id = o.id
           RETURNING 1),
         gone AS (
           UPDATE webhook_endpoints SET active = false, disabled_reason = 'The endpoint answered 410 Gone at ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), updated_at = now()
            WHERE id = ANY($11::text[]) AND active
           RETURNING id)
         SELECT (SELECT count(*) FROM upd) AS updated`,
        [
          batch.map((o) => o.id),
          batch.map((o) => o.status),
          batch.map((o) => o.attempts),
          batch.map((o) => o.nextAttemptAt),
          batch.map((o) => o.statusCode),
          batch.map((o) => o.error),
          batch.map((o) => o.latencyMs),
          batch.map((o) => o.excerpt),
          batch.map((o) => o.attemptedAt),
          this.options.workerId,
          [...new Set(batch.map((o) => o.gone).filter((id): id is string => id !== null))],
        ],
      );
    } catch (error) {
      // The claims run out and the deliveries are sent again: at least once, never lost.
      this.log.error({ err: error, outcomes: batch.length }, 'recording webhook outcomes failed');
    }
  }
}

async function readExcerpt(body: ReadableStream<Uint8Array> | null): Promise<string | null> {
  if (!body) return null;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < EXCERPT_CHARS) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text.slice(0, EXCERPT_CHARS);
}

function describeError(error: Error, timeoutMs: number): string {
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return `No answer within ${timeoutMs / 1000} s`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}: ${cause.message ?? error.message}`;
  return error.message;
}
