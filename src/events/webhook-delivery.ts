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
 * receivers de-duplicate by webhook-id). The worker has at most `perEndpoint` requests of each
 * endpoint in flight and never waits on one endpoint to serve another, so a slow or dead endpoint
 * cannot hold up the rest.
 *
 * An endpoint whose last attempt did not fail is claimed ahead (`prefetch` more than its requests
 * in flight): a finished request is followed at once by the next, and claim statements run beside
 * the requests instead of between them, so delivery is not bounded by the database's round trips.
 * A delivery claimed ahead that could not start while its lease still covers a whole attempt is
 * released unsent, for a later claim.
 *
 * Bounded by construction: deliveries claimed and not yet recorded (waiting for a slot, in flight,
 * finished and waiting for the next write, or being written) never exceed `total`, so a backlog
 * whose every attempt fails at once (a refused private address) is worked through `total` at a
 * time, the next claim taking only the room the written ones freed, between turns of the event
 * loop (WakeLoop). Within an endpoint, first attempts
 * and retries are claimed in turn, so a fresh event never waits behind the endpoint's backlog.
 */
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import { webhookAttempts, webhookAttemptSeconds } from '../platform/metrics.js';
import { WakeLoop } from '../platform/wake-loop.js';
import { webhookHeaders } from '../outbound/standard-webhooks.js';
import { signingSecrets } from './webhook-service.js';
import * as store from './webhook-store.js';
import type { ClaimedRow, OutcomeRecord } from './webhook-store.js';
import { type GuardedHttp, unsafeCause } from '../outbound/ssrf.js';

export interface WebhookDeliveryOptions {
  retryScheduleMs: number[];
  workerId: string;
  /** Per attempt (default 15 s); a claim is leased for twice this. */
  timeoutMs?: number;
  /** In-flight requests per endpoint (default 32), and deliveries held in all (default 256). */
  perEndpoint?: number;
  total?: number;
  /** Deliveries claimed ahead per endpoint that answers well (default perEndpoint). */
  prefetch?: number;
}

const IDLE_POLL_MS = 50;
/** On stop, requests in flight get this long to finish; the rest are abandoned and released for the next worker. */
const STOP_GRACE_MS = 2_000;
const EXCERPT_CHARS = 1000;
/** Statuses whose answer has no body (as in the Fetch standard): their excerpt is null, not empty. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

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
  /** Claimed ahead, per endpoint, in claim order: each waits for one of its endpoint's slots. */
  private readonly waiting = new Map<string, { delivery: ClaimedRow; claimedAt: number }[]>();
  private waitingCount = 0;
  /** Endpoints whose last attempt from this worker succeeded (claimed ahead, see claimDue). */
  private readonly answering = new Set<string>();
  /** Outcomes being written now (claimed and not yet recorded, like those in flight). */
  private recording = 0;
  private readonly running = new Set<Promise<void>>();
  /** Aborts the requests still in flight when stop()'s grace runs out. */
  private readonly abandon = new AbortController();
  private outcomes: OutcomeRecord[] = [];
  /**
   * Deliveries released unsent and unrecorded, for a later claim: a request abandoned by stop()
   * (released by stop, for the next worker), or one claimed ahead that waited too long (released
   * by the next write).
   */
  private readonly abandoned: string[] = [];
  private flushing: Promise<void> | undefined;
  private endpointsActive = false;
  private endpointsKnownUntil = 0;
  private unsubscribe: (() => void) | undefined;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly maxWaitMs: number;
  private readonly perEndpoint: number;
  private readonly prefetch: number;
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
    // A delivery claimed ahead starts only while its lease covers a whole attempt with time to
    // spare (half of what the lease holds beyond an attempt), so no other worker takes it meanwhile.
    this.maxWaitMs = (this.leaseMs - this.timeoutMs) / 2;
    this.perEndpoint = options.perEndpoint ?? 32;
    this.prefetch = options.prefetch ?? this.perEndpoint;
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
    // What waits for a slot is not started now: released below, for the next worker.
    for (const queue of this.waiting.values()) for (const { delivery } of queue) this.abandoned.push(delivery.id);
    this.waiting.clear();
    this.waitingCount = 0;
    const settled = Promise.all(this.running);
    const grace = new Promise<'late'>((resolve) => setTimeout(resolve, STOP_GRACE_MS, 'late').unref());
    if ((await Promise.race([settled, grace])) === 'late') {
      this.abandon.abort();
      await settled;
    }
    await this.flushing;
    await this.flush();
    if (this.abandoned.length > 0) {
      await store
        .releaseClaims(this.database, this.options.workerId, this.abandoned)
        .catch((error: unknown) => this.log.warn({ err: error }, 'releasing abandoned webhook deliveries failed; their claims run out instead'));
    }
  }

  private inFlightTotal(): number {
    let sum = 0;
    for (const n of this.inflight.values()) sum += n;
    return sum;
  }

  /**
   * One turn: claims as many as the bound leaves room for. Finished attempts are written beside
   * the claim, not before it (a write that frees room wakes the loop).
   */
  private async turn(): Promise<number> {
    if (this.outcomes.length > 0 || this.abandoned.length > 0) this.scheduleFlush();
    const room = this.total - this.inFlightTotal() - this.waitingCount - this.outcomes.length - this.abandoned.length - this.recording;
    if (room <= 0 || !(await this.anyActiveEndpoint())) return IDLE_POLL_MS;
    const claimed = await this.claim(room);
    const claimedAt = Date.now();
    for (const delivery of claimed) {
      let queue = this.waiting.get(delivery.endpoint_id);
      if (!queue) this.waiting.set(delivery.endpoint_id, (queue = []));
      queue.push({ delivery, claimedAt });
      this.waitingCount++;
    }
    for (const endpointId of new Set(claimed.map((delivery) => delivery.endpoint_id))) this.startWaiting(endpointId);
    return claimed.length > 0 ? 0 : IDLE_POLL_MS;
  }

  /**
   * Starts the endpoint's waiting deliveries while it has a free slot. One whose lease no longer
   * covers a whole attempt (it waited behind slow requests) is released unsent instead.
   */
  private startWaiting(endpointId: string): void {
    const queue = this.waiting.get(endpointId);
    while (queue && queue.length > 0 && (this.inflight.get(endpointId) ?? 0) < this.perEndpoint) {
      const { delivery, claimedAt } = queue.shift()!;
      this.waitingCount--;
      if (Date.now() - claimedAt > this.maxWaitMs) {
        this.abandoned.push(delivery.id);
        continue;
      }
      this.launch(delivery);
    }
    if (queue?.length === 0) this.waiting.delete(endpointId);
  }

  /** What the worker holds of each endpoint: requests in flight and deliveries waiting for a slot. */
  private held(): Map<string, number> {
    const held = new Map(this.inflight);
    for (const [endpointId, queue] of this.waiting) held.set(endpointId, (held.get(endpointId) ?? 0) + queue.length);
    return held;
  }

  /**
   * Whether any endpoint is active (in any account). Without one there is nothing to claim, and
   * the claim query is skipped: it used to run 20 times a second and after every batch of events,
   * which cost a direct send's worth of database round trips. Known for 1 s when false (an
   * endpoint created in any process says so at once: NOTIFY 'endpoints'), 5 s when true.
   */
  private async anyActiveEndpoint(): Promise<boolean> {
    if (Date.now() < this.endpointsKnownUntil) return this.endpointsActive;
    this.endpointsActive = await store.anyActiveEndpoint(this.database);
    this.endpointsKnownUntil = Date.now() + (this.endpointsActive ? 5_000 : 1_000);
    return this.endpointsActive;
  }

  /** Claims up to `limit` due deliveries, within each endpoint's room (see claimDue). */
  private claim(limit: number): Promise<ClaimedRow[]> {
    return store.claimDue(this.database, {
      workerId: this.options.workerId,
      limit,
      perEndpoint: this.perEndpoint,
      prefetch: this.prefetch,
      inFlight: this.held(),
      leaseMs: this.leaseMs,
    });
  }

  private launch(delivery: ClaimedRow): void {
    this.inflight.set(delivery.endpoint_id, (this.inflight.get(delivery.endpoint_id) ?? 0) + 1);
    const task = this.attempt(delivery)
      .then((outcome) => {
        if (!outcome) {
          this.abandoned.push(delivery.id);
          return;
        }
        this.outcomes.push(outcome);
        if (outcome.status === 'SUCCEEDED') this.answering.add(delivery.endpoint_id);
        else this.answering.delete(delivery.endpoint_id);
        this.scheduleFlush();
      })
      .catch((error: unknown) => this.log.error({ err: error, deliveryId: delivery.id }, 'webhook attempt failed unexpectedly'))
      .finally(() => {
        const left = (this.inflight.get(delivery.endpoint_id) ?? 1) - 1;
        if (left <= 0) this.inflight.delete(delivery.endpoint_id);
        else this.inflight.set(delivery.endpoint_id, left);
        this.running.delete(task);
        if (!this.loop.stopped) this.startWaiting(delivery.endpoint_id);
        // Claim again once the endpoint has room for a batch (half its slots), not after every
        // attempt: one claim statement per few deliveries instead of one per delivery. One that
        // answers well is claimed for while it still has deliveries waiting, so none of its slots
        // stays empty while the claim runs.
        const held = left + (this.waiting.get(delivery.endpoint_id)?.length ?? 0);
        if (held <= (this.answering.has(delivery.endpoint_id) ? this.perEndpoint : this.perEndpoint / 2)) this.loop.wake();
      });
    this.running.add(task);
  }

  /** One attempt and its outcome; undefined when stop() abandoned it (not an attempt the endpoint failed). */
  private async attempt(delivery: ClaimedRow): Promise<OutcomeRecord | undefined> {
    const answer = await this.send(delivery);
    return answer && judge(delivery, answer, this.options.retryScheduleMs);
  }

  /** POSTs the event, signed; what the endpoint answered, or why there was no answer. */
  private async send(delivery: ClaimedRow): Promise<Answer | undefined> {
    const body = webhookBody(delivery);
    const attemptedAt = new Date();
    const headers = webhookHeaders({ id: delivery.event_id, timestamp: attemptedAt, body, secrets: signingSecrets(delivery, attemptedAt.getTime()) });
    const started = performance.now();
    const answer: Answer = { attemptedAt, statusCode: null, excerpt: null, error: null, retryAfter: undefined, latencyMs: 0 };
    try {
      const response = await this.http.request(delivery.url, {
        method: 'POST',
        headers: { ...headers, 'user-agent': 'Waygate-Webhooks/1.0' },
        body,
        timeoutMs: this.timeoutMs,
        allowPrivate: this.http.allowPrivate,
        signal: this.abandon.signal,
      });
      answer.statusCode = response.status;
      answer.retryAfter = retryAfterMs(response.header('retry-after') ?? null);
      if (NULL_BODY_STATUSES.has(response.status)) await response.discard();
      else answer.excerpt = await readExcerpt(response.body);
    } catch (caught) {
      if (this.abandon.signal.aborted) return undefined;
      const unsafe = unsafeCause(caught);
      answer.error = unsafe ? unsafe.message : caught instanceof Error ? describeError(caught, this.timeoutMs) : String(caught);
    }
    answer.latencyMs = Math.round(performance.now() - started);
    return answer;
  }

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush()).finally(() => {
      this.flushing = undefined;
      if (this.outcomes.length > 0) this.scheduleFlush();
    });
  }

  /**
   * Records the finished attempts in one statement (recordOutcomes), and releases what was
   * released unsent; the room they held is free again.
   */
  private async flush(): Promise<void> {
    const batch = this.outcomes;
    this.outcomes = [];
    const released = this.loop.stopped ? [] : this.abandoned.splice(0);
    if (batch.length === 0 && released.length === 0) return;
    this.recording += batch.length + released.length;
    try {
      if (batch.length > 0) await store.recordOutcomes(this.database, this.options.workerId, batch);
      if (released.length > 0) await store.releaseClaims(this.database, this.options.workerId, released);
    } catch (error) {
      // The claims run out and the deliveries are sent again: at least once, never lost.
      this.log.error({ err: error, outcomes: batch.length, released: released.length }, 'recording webhook outcomes failed');
    } finally {
      this.recording -= batch.length + released.length;
      this.loop.wake();
    }
  }
}

/** What one attempt got back: an answer (statusCode) or an error, never both missing. */
interface Answer {
  attemptedAt: Date;
  statusCode: number | null;
  excerpt: string | null;
  error: string | null;
  retryAfter: number | undefined;
  latencyMs: number;
}

/** The body: the event's stored data (JSON text) inserted as it is. seq is null for test events. */
function webhookBody(delivery: ClaimedRow): string {
  const seq = delivery.seq === null ? 'null' : String(Number(delivery.seq));
  return `{"type":${JSON.stringify(delivery.type)},"timestamp":"${delivery.created_at.toISOString()}","seq":${seq},"data":${delivery.data}}`;
}

/**
 * The delivery's next state after an attempt, the one home of the rule: 2xx succeeds; 410 fails it
 * and turns the endpoint off; anything else is retried after schedule[attempts] (or the endpoint's
 * Retry-After when later, at most 24 h) until the schedule runs out.
 */
function judge(delivery: ClaimedRow, answer: Answer, schedule: number[]): OutcomeRecord {
  const { statusCode, error } = answer;
  const attempts = delivery.attempts + 1;
  const base = { id: delivery.id, address: delivery.address, attempts, statusCode, error, latencyMs: answer.latencyMs, excerpt: answer.excerpt, attemptedAt: answer.attemptedAt };
  webhookAttemptSeconds.observe(answer.latencyMs / 1000);
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
    webhookAttempts.inc({ result: 'delivered' });
    return { ...base, status: 'SUCCEEDED', nextAttemptAt: null, gone: null };
  }
  if (statusCode === 410) {
    webhookAttempts.inc({ result: 'gone' });
    return { ...base, status: 'FAILED', nextAttemptAt: null, error: 'The endpoint answered 410 Gone; it was turned off', gone: delivery.endpoint_id };
  }
  webhookAttempts.inc({ result: statusCode === null ? 'error' : 'failed' });
  if (attempts >= schedule.length) {
    return { ...base, status: 'FAILED', nextAttemptAt: null, error: error ?? `HTTP ${statusCode} (gave up after ${attempts} attempts)`, gone: null };
  }
  const delay = Math.min(MAX_RETRY_AFTER_MS, Math.max(schedule[attempts]!, answer.retryAfter ?? 0));
  return { ...base, status: 'PENDING', nextAttemptAt: new Date(Date.now() + delay), error: error ?? `HTTP ${statusCode}`, gone: null };
}

/** The first EXCERPT_CHARS characters of a response body; the rest is not read (leaving the loop destroys the stream). */
async function readExcerpt(body: Readable): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of body) {
    text += decoder.decode(chunk as Uint8Array, { stream: true });
    if (text.length >= EXCERPT_CHARS) break;
  }
  return text.slice(0, EXCERPT_CHARS);
}

function describeError(error: Error, timeoutMs: number): string {
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return `No answer within ${timeoutMs / 1000} s`;
  // A connection's own error carries its code (ECONNREFUSED, UND_ERR_SOCKET); a wrapped one, its cause's.
  const code = (error as { code?: unknown }).code;
  const cause = typeof code === 'string' ? { code, message: error.message } : (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}: ${cause.message ?? error.message}`;
  return error.message;
}
