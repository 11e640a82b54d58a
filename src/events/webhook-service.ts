/**
 * Webhook endpoints: where an account's events are delivered, which types, and the signing
 * secret. The delivery worker (src/events/webhook-delivery.ts) sends what the outbox queued;
 * this service manages endpoints and lets the account inspect, retry and replay deliveries.
 *
 * - Active endpoints count against the plan's max_webhooks (null = unlimited), checked under
 *   the account row lock so concurrent creations or activations cannot pass the limit.
 * - URLs are checked against SSRF (GuardedHttp.validate) when stored; the worker checks again at
 *   connection time.
 * - The secret never appears in a listing or a read: only in the creation answer, GET …/secret
 *   and the rotation answer. After a rotation the previous secret keeps signing for 24 hours.
 */
import type { Bus } from '../platform/bus.js';
import type { Database, Queryable } from '../platform/database.js';
import { lockAccountPlan } from '../directory/account-store.js';
import { AppError, validationError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { WEBHOOK_DESCRIPTION_MAX } from '../platform/text-limits.js';
import { newWebhookSecret } from '../outbound/standard-webhooks.js';
import { UnsafeUrlError, type GuardedHttp } from '../outbound/ssrf.js';
import type { Page } from '../directory/contacts.js';
import { MAX_PAGE_SIZE } from '../directory/contacts.js';
import { appendTestEvent, type EventType } from './event-store.js';
import * as store from './webhook-store.js';
import { healthState, type WebhookEndpoint } from './webhook-record.js';
import { SUBSCRIBABLE_EVENT_TYPES, type SubscribableEventType } from './event-types.js';
import type { AttemptRow, DeliveryRow, DeliveryStatus, EndpointRow, SecretRow } from './webhook-store.js';
import type { Lister, Listing, ListingRequest } from '../platform/listing.js';

export { SUBSCRIBABLE_EVENT_TYPES, type SubscribableEventType } from './event-types.js';
export type { WebhookEndpoint } from './webhook-record.js';

export { DELIVERY_STATUSES, type DeliveryStatus } from './webhook-store.js';

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;
/** Attempts shown with each delivery in the delivery log. */
const LAST_ATTEMPTS = 5;
export const MAX_URL_LENGTH = 2048;
export const TEST_EVENT_MESSAGE = 'This is a test event from Waygate';

export interface WebhookSecret {
  secret: string;
  /** The secret before the last rotation, still signing until previousSecretExpiresAt; null once expired. */
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

export interface WebhookAttempt {
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

export interface WebhookDelivery {
  id: string;
  eventId: string;
  eventType: EventType;
  /** Null for webhook.test events, which stand outside the account's sequence. */
  eventSeq: number | null;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  /** Up to the 5 newest attempts, newest first. */
  lastAttempts: WebhookAttempt[];
}

export interface CreateWebhookInput {
  url: string;
  events?: string[] | undefined;
  description?: string | null | undefined;
  active?: boolean | undefined;
}

export type UpdateWebhookInput = Partial<CreateWebhookInput>;

const toEndpoint = (r: EndpointRow): WebhookEndpoint => ({
  id: r.id,
  url: r.url,
  description: r.description,
  events: r.events as SubscribableEventType[],
  active: r.active,
  disabledReason: r.disabled_reason,
  health: {
    state: healthState(r.active, r.consecutive_failures, r.last_success_at),
    consecutiveFailures: r.consecutive_failures,
    lastSuccessAt: r.last_success_at,
    lastFailureAt: r.last_failure_at,
  },
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** Whether the previous secret still signs: until it expires (PREVIOUS_SECRET_TTL_MS after the rotation). */
function previousSecretSigns(r: SecretRow, now: number): r is SecretRow & { previous_secret: string; previous_secret_expires_at: Date } {
  return r.previous_secret !== null && r.previous_secret_expires_at !== null && r.previous_secret_expires_at.getTime() > now;
}

/** The secrets a delivery is signed with now: the current one, and the previous one while it still signs. */
export function signingSecrets(r: SecretRow, now = Date.now()): string[] {
  return previousSecretSigns(r, now) ? [r.secret, r.previous_secret] : [r.secret];
}

const toSecret = (r: SecretRow): WebhookSecret => {
  const previousValid = previousSecretSigns(r, Date.now());
  return {
    secret: r.secret,
    previousSecret: previousValid ? r.previous_secret : null,
    previousSecretExpiresAt: previousValid ? r.previous_secret_expires_at : null,
  };
};

const toAttempt = (a: AttemptRow): WebhookAttempt => ({
  attemptedAt: a.attempted_at,
  statusCode: a.status_code,
  latencyMs: a.latency_ms,
  responseExcerpt: a.response_excerpt,
  error: a.error,
});

const toDelivery = (r: DeliveryRow, lastAttempts: WebhookAttempt[]): WebhookDelivery => ({
  id: r.id,
  eventId: r.event_id,
  eventType: r.event_type as EventType,
  eventSeq: r.event_seq === null ? null : Number(r.event_seq),
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lastStatusCode: r.last_status_code,
  lastError: r.last_error,
  createdAt: r.created_at,
  deliveredAt: r.delivered_at,
  lastAttempts,
});

const notFound = (): AppError => new AppError('NOT_FOUND', 'Webhook endpoint not found');

export class WebhookService {
  constructor(
    private readonly database: Database,
    private readonly http: GuardedHttp,
    private readonly lister: Lister,
    private readonly bus?: Bus,
  ) {}

  /** Delivery workers skip their polls while no endpoint is active anywhere; this tells them to look again. */
  private endpointsChanged(): void {
    this.bus?.publishSoon('waygate_webhooks', 'endpoints');
  }

  /** Wakes the delivery worker (it also polls, so a lost notification only costs latency). */
  private wakeWorker(): void {
    this.bus?.publishSoon('waygate_webhooks', 'due');
  }

  /** A URL that may be stored: http(s), well formed, and (unless ALLOW_PRIVATE_URLS) public. */
  private async checkUrl(raw: string): Promise<string> {
    const trimmed = raw.trim();
    if (trimmed.length === 0) throw validationError('url', 'must not be empty');
    if (trimmed.length > MAX_URL_LENGTH) throw validationError('url', `must be at most ${MAX_URL_LENGTH} characters`);
    try {
      return (await this.http.validate(trimmed)).toString();
    } catch (error) {
      if (error instanceof UnsafeUrlError) throw validationError('url', error.message);
      throw error;
    }
  }

  /** The subscribed types, de-duplicated in the order given; [] (every type) when absent or empty. */
  private checkEvents(events: string[] | undefined): SubscribableEventType[] {
    if (!events) return [];
    const known = new Set<string>(SUBSCRIBABLE_EVENT_TYPES);
    events.forEach((type, index) => {
      if (!known.has(type)) throw validationError(`events[${index}]`, `unknown event type "${type}"; one of ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}`);
    });
    return [...new Set(events)] as SubscribableEventType[];
  }

  private checkDescription(description: string | null | undefined): string | null {
    if (description === undefined || description === null) return null;
    const trimmed = description.trim();
    if (trimmed.length > WEBHOOK_DESCRIPTION_MAX) throw validationError('description', `must be at most ${WEBHOOK_DESCRIPTION_MAX} characters`);
    return trimmed === '' ? null : trimmed;
  }

  /**
   * Locks the account row, which serialises every change to the count of active endpoints, and
   * reads the plan's limit (null: unlimited). Take it before any endpoint row lock (the order of
   * create and of the event outbox), in the transaction that adds or activates an endpoint.
   */
  private async lockWebhookLimit(tx: Queryable, accountId: string): Promise<number | null> {
    return (await lockAccountPlan(tx, accountId))?.maxWebhooks ?? null;
  }

  /**
   * Throws 403 PLAN_LIMIT when the account already has as many active endpoints as its plan
   * allows (null: unlimited). Call under lockWebhookLimit: concurrent ones queue behind the lock
   * and see its result.
   */
  private async assertWebhookSlot(tx: Queryable, accountId: string, limit: number | null): Promise<void> {
    if (limit === null) return;
    const used = await store.countActiveEndpoints(tx, accountId);
    if (used >= limit) {
      throw new AppError(
        'PLAN_LIMIT',
        `Your plan allows ${limit} active webhook endpoint${limit === 1 ? '' : 's'}; deactivate or delete one, or upgrade the plan`,
        { limit, used },
      );
    }
  }

  private async endpointRow(db: Queryable, accountId: string, id: string): Promise<EndpointRow & SecretRow> {
    const row = await store.findEndpoint(db, accountId, id);
    if (!row) throw notFound();
    return row;
  }

  async create(accountId: string, input: CreateWebhookInput): Promise<WebhookEndpoint & { secret: string }> {
    const url = await this.checkUrl(input.url);
    const events = this.checkEvents(input.events);
    const description = this.checkDescription(input.description);
    const active = input.active ?? true;
    const secret = newWebhookSecret();
    const row = await this.database.transaction(async (tx) => {
      if (active) await this.assertWebhookSlot(tx, accountId, await this.lockWebhookLimit(tx, accountId));
      return store.insertEndpoint(tx, { id: newId('wh'), accountId, url, description, events, active, secret });
    });
    this.endpointsChanged();
    return { ...toEndpoint(row), secret };
  }

  async list(accountId: string, options: { page: number; limit: number }): Promise<Page<WebhookEndpoint>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const { rows, total } = await store.listEndpoints(this.database, accountId, limit, (options.page - 1) * limit);
    return { data: rows.map(toEndpoint), meta: { total, page: options.page, limit } };
  }

  async get(accountId: string, id: string): Promise<WebhookEndpoint> {
    return toEndpoint(await this.endpointRow(this.database, accountId, id));
  }

  /**
   * Changes url, events, description and active. Activating an inactive endpoint counts it
   * against the plan again and clears the reason Waygate gave for turning it off.
   */
  async update(accountId: string, id: string, input: UpdateWebhookInput): Promise<WebhookEndpoint> {
    const changes: store.EndpointChanges = {
      url: input.url === undefined ? undefined : await this.checkUrl(input.url),
      events: input.events === undefined ? undefined : this.checkEvents(input.events),
      description: input.description === undefined ? undefined : this.checkDescription(input.description),
      active: input.active,
    };
    const row = await this.database.transaction(async (tx) => {
      const activating = input.active === true;
      const limit = activating ? await this.lockWebhookLimit(tx, accountId) : null;
      const current = await store.lockEndpoint(tx, accountId, id);
      if (!current) throw notFound();
      if (activating && !current.active) await this.assertWebhookSlot(tx, accountId, limit);
      return (await store.updateEndpoint(tx, accountId, id, changes))!;
    });
    this.endpointsChanged();
    return toEndpoint(row);
  }

  /** Deletes the endpoint with its deliveries and their attempts (the events stay). */
  async remove(accountId: string, id: string): Promise<void> {
    if (!(await store.deleteEndpoint(this.database, accountId, id))) throw notFound();
  }

  async secret(accountId: string, id: string): Promise<WebhookSecret> {
    return toSecret(await this.endpointRow(this.database, accountId, id));
  }

  /** A new secret; the current one becomes the previous secret and keeps signing for 24 hours. */
  async rotateSecret(accountId: string, id: string): Promise<WebhookSecret> {
    const row = await store.rotateEndpointSecret(this.database, accountId, id, newWebhookSecret(), PREVIOUS_SECRET_TTL_MS);
    if (!row) throw notFound();
    return toSecret(row);
  }

  /**
   * Appends a `webhook.test` event delivered to this endpoint only. 409 when the endpoint is
   * inactive: only active endpoints are delivered to, so the test would wait until activation.
   */
  async test(accountId: string, id: string): Promise<{ eventId: string; eventSeq: null; deliveryId: string }> {
    const result = await this.database.transaction(async (tx) => {
      const endpoint = await this.endpointRow(tx, accountId, id);
      if (!endpoint.active) {
        throw new AppError('CONFLICT', 'The endpoint is inactive and receives nothing; activate it (PATCH active: true) to test it', {
          active: false,
          disabledReason: endpoint.disabled_reason,
        });
      }
      const appended = await appendTestEvent(tx, accountId, id, { endpointId: id, message: TEST_EVENT_MESSAGE });
      // No delivery: the endpoint was deleted meanwhile (throwing rolls the event back).
      if (!appended) throw notFound();
      return { ...appended, eventSeq: null };
    });
    this.wakeWorker();
    return result;
  }

  private async withAttempts(rows: DeliveryRow[]): Promise<WebhookDelivery[]> {
    const attempts = await store.latestAttempts(this.database, rows.map((r) => r.id), LAST_ATTEMPTS);
    const byDelivery = new Map<string, WebhookAttempt[]>();
    for (const a of attempts) {
      const list = byDelivery.get(a.delivery_id) ?? [];
      list.push(toAttempt(a));
      byDelivery.set(a.delivery_id, list);
    }
    return rows.map((r) => toDelivery(r, byDelivery.get(r.id) ?? []));
  }

  /** The endpoint's deliveries, newest first, each with its latest attempts. */
  async deliveries(accountId: string, id: string, options: ListingRequest & { status?: DeliveryStatus | undefined }): Promise<Listing<WebhookDelivery>> {
    await this.endpointRow(this.database, accountId, id);
    const listing = await this.lister.list<DeliveryRow>(store.deliveryListing(accountId, id, options.status), options);
    return { data: await this.withAttempts(listing.data), meta: listing.meta };
  }

  /**
   * Queues one delivery again now (a failed one, or a succeeded one to receive it again); its
   * attempt count and history are kept. 409 if it is still waiting (PENDING).
   */
  async retryDelivery(accountId: string, id: string, deliveryId: string): Promise<WebhookDelivery> {
    if (!(await store.requeueDelivery(this.database, accountId, id, deliveryId))) {
      await this.endpointRow(this.database, accountId, id);
      const status = await store.deliveryStatus(this.database, accountId, id, deliveryId);
      if (!status) throw new AppError('NOT_FOUND', 'Webhook delivery not found');
      throw new AppError('CONFLICT', 'The delivery is already waiting to be sent (PENDING); it is retried on its schedule', { status });
    }
    this.wakeWorker();
    const [delivery] = await this.withAttempts([(await store.findDelivery(this.database, deliveryId))!]);
    return delivery!;
  }

  /** Queues again, now, every FAILED delivery of the endpoint created at or after `since`. */
  async replay(accountId: string, id: string, since: Date): Promise<{ requeued: number }> {
    await this.endpointRow(this.database, accountId, id);
    const requeued = await store.requeueFailedSince(this.database, accountId, id, since);
    if (requeued > 0) this.wakeWorker();
    return { requeued };
  }
}
