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
import { AppError, validationError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { newWebhookSecret } from '../outbound/standard-webhooks.js';
import { UnsafeUrlError, type GuardedHttp } from '../outbound/ssrf.js';
import type { Page } from '../directory/contacts.js';
import { MAX_PAGE_SIZE } from '../directory/contacts.js';
import { appendEvents, EVENT_TYPES, type EventType } from './event-store.js';
import type { Lister, Listing, ListingRequest } from '../platform/listing.js';

/** The event types an endpoint can subscribe to (test events go only to the endpoint tested). */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((type): type is Exclude<EventType, 'webhook.test'> => type !== 'webhook.test');
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];

export const DELIVERY_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;
/** Attempts shown with each delivery in the delivery log. */
const LAST_ATTEMPTS = 5;
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 500;
export const TEST_EVENT_MESSAGE = 'This is a test event from Waygate';

export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  /** Subscribed types; empty means every type. */
  events: SubscribableEventType[];
  active: boolean;
  /** Why Waygate turned the endpoint off (it answered 410), if it did. */
  disabledReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

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

interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  events: string[];
  active: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: EventType;
  event_seq: number | null;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
}

interface AttemptRow {
  delivery_id: string;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/** The public columns of an endpoint (never the secrets). */
const ENDPOINT_COLUMNS = 'id, account_id, url, description, events, active, disabled_reason, created_at, updated_at';
/** A delivery with its event's type and seq. */
const DELIVERY_COLUMNS = `SELECT d.id, d.event_id, e.type AS event_type, e.seq AS event_seq, d.status, d.attempts, d.next_attempt_at,
       d.last_status_code, d.last_error, d.created_at, d.delivered_at`;
const DELIVERY_SELECT = `${DELIVERY_COLUMNS}
  FROM webhook_deliveries d JOIN events e ON e.id = d.event_id`;

const toEndpoint = (r: Omit<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>): WebhookEndpoint => ({
  id: r.id,
  url: r.url,
  description: r.description,
  events: r.events as SubscribableEventType[],
  active: r.active,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toSecret = (r: Pick<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>): WebhookSecret => {
  const previousValid = r.previous_secret !== null && r.previous_secret_expires_at !== null && r.previous_secret_expires_at.getTime() > Date.now();
  return {
    secret: r.secret,
    previousSecret: previousValid ? r.previous_secret : null,
    previousSecretExpiresAt: previousValid ? r.previous_secret_expires_at : null,
  };
};

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
    if (trimmed.length > MAX_DESCRIPTION_LENGTH) throw validationError('description', `must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
    return trimmed === '' ? null : trimmed;
  }

  /** Locks the account row (serialising every change to the count of active endpoints) and reads the plan's limit. */
  private async lockWebhookLimit(tx: Queryable, accountId: string): Promise<number | null> {
    const [plan] = await tx.query<{ max_webhooks: number | null }>(
      'SELECT p.max_webhooks FROM accounts a JOIN plans p ON p.id = a.plan_id WHERE a.id = $1 FOR UPDATE OF a',
      [accountId],
    );
    return plan?.max_webhooks ?? null;
  }

  /**
   * Throws 403 PLAN_LIMIT when the account already has as many active endpoints as its plan
   * allows (null: unlimited). Call under lockWebhookLimit, in the transaction that adds or
   * activates one: concurrent ones queue behind the lock and see its result.
   */
  private async assertWebhookSlot(tx: Queryable, accountId: string, limit: number | null): Promise<void> {
    if (limit === null) return;
    const [counted] = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1 AND active', [accountId]);
    const used = counted?.n ?? 0;
    if (used >= limit) {
      throw new AppError(
        'PLAN_LIMIT',
        `Your plan allows ${limit} active webhook endpoint${limit === 1 ? '' : 's'}; deactivate or delete one, or upgrade the plan`,
        { limit, used },
      );
    }
  }

  private async endpointRow(db: Queryable, accountId: string, id: string): Promise<EndpointRow> {
    const [row] = await db.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1 AND account_id = $2', [id, accountId]);
    if (!row) throw notFound();
    return row;
  }

  async create(accountId: string, input: CreateWebhookInput): Promise<WebhookEndpoint & { secret: string }> {
    const url = await this.checkUrl(input.url);
    const events = this.checkEvents(input.events);
    const description = this.checkDescription(input.description);
    const active = input.active ?? true;
    const id = newId('wh');
    const secret = newWebhookSecret();
    const row = await this.database.transaction(async (tx) => {
      if (active) await this.assertWebhookSlot(tx, accountId, await this.lockWebhookLimit(tx, accountId));
      const [inserted] = await tx.query<EndpointRow>(
        `INSERT INTO webhook_endpoints (id, account_id, url, description, events, active, secret)
         VALUES ($1, $2, $3, $4, $5::text[], $6, $7) RETURNING ${ENDPOINT_COLUMNS}`,
        [id, accountId, url, description, events, active, secret],
      );
      return inserted!;
    });
    this.endpointsChanged();
    return { ...toEndpoint(row), secret };
  }

  async list(accountId: string, options: { page: number; limit: number }): Promise<Page<WebhookEndpoint>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const rows = await this.database.query<EndpointRow & { total: number }>(
      `SELECT ${ENDPOINT_COLUMNS}, count(*) OVER () AS total FROM webhook_endpoints WHERE account_id = $1
        ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [accountId, limit, (options.page - 1) * limit],
    );
    let total = rows[0]?.total;
    if (total === undefined) {
      const [counted] = await this.database.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1', [accountId]);
      total = counted?.n ?? 0;
    }
    return { data: rows.map(toEndpoint), meta: { total: Number(total), page: options.page, limit } };
  }

  async get(accountId: string, id: string): Promise<WebhookEndpoint> {
    return toEndpoint(await this.endpointRow(this.database, accountId, id));
  }

  /**
   * Changes url, events, description and active. Activating an inactive endpoint counts it
   * against the plan again and clears the reason Waygate gave for turning it off.
   */
  async update(accountId: string, id: string, input: UpdateWebhookInput): Promise<WebhookEndpoint> {
    const url = input.url === undefined ? undefined : await this.checkUrl(input.url);
    const events = input.events === undefined ? undefined : this.checkEvents(input.events);
    const description = input.description === undefined ? undefined : this.checkDescription(input.description);
    const row = await this.database.transaction(async (tx) => {
      // The account row lock first (the order of create and of the event outbox), then the endpoint's.
      const activating = input.active === true;
      const limit = activating ? await this.lockWebhookLimit(tx, accountId) : null;
      const [current] = await tx.query<{ active: boolean }>('SELECT active FROM webhook_endpoints WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
      if (!current) throw notFound();
      if (activating && !current.active) await this.assertWebhookSlot(tx, accountId, limit);

      const sets: string[] = ['updated_at = now()'];
      const params: unknown[] = [id, accountId];
      const set = (column: string, value: unknown, cast = ''): void => {
        params.push(value);
        sets.push(`${column} = $${params.length}${cast}`);
      };
      if (url !== undefined) set('url', url);
      if (events !== undefined) set('events', events, '::text[]');
      if (description !== undefined) set('description', description);
      if (input.active !== undefined) {
        set('active', input.active);
        if (input.active) sets.push('disabled_reason = NULL');
      }
      const [updated] = await tx.query<EndpointRow>(
        `UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = $1 AND account_id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
        params,
      );
      return updated!;
    });
    this.endpointsChanged();
    return toEndpoint(row);
  }

  /** Deletes the endpoint with its deliveries and their attempts (the events stay). */
  async remove(accountId: string, id: string): Promise<void> {
    const rows = await this.database.query('DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2 RETURNING id', [id, accountId]);
    if (rows.length === 0) throw notFound();
  }

  async secret(accountId: string, id: string): Promise<WebhookSecret> {
    return toSecret(await this.endpointRow(this.database, accountId, id));
  }

  /** A new secret; the current one becomes the previous secret and keeps signing for 24 hours. */
  async rotateSecret(accountId: string, id: string): Promise<WebhookSecret> {
    const [row] = await this.database.query<EndpointRow>(
      `UPDATE webhook_endpoints
          SET previous_secret = secret, previous_secret_expires_at = now() + $3::int * interval '1 millisecond',
              secret = $4, updated_at = now()
        WHERE id = $1 AND account_id = $2
        RETURNING secret, previous_secret, previous_secret_expires_at`,
      [id, accountId, PREVIOUS_SECRET_TTL_MS, newWebhookSecret()],
    );
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
      const [eventId] = await appendEvents(tx, [{ accountId, type: 'webhook.test', data: { endpointId: id, message: TEST_EVENT_MESSAGE } }], id);
      const [row] = await tx.query<{ delivery_id: string }>(`SELECT id AS delivery_id FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2`, [eventId, id]);
      // No delivery: the endpoint was deleted meanwhile (throwing rolls the event back).
      if (!eventId || !row) throw notFound();
      return { eventId, eventSeq: null, deliveryId: row.delivery_id };
    });
    this.wakeWorker();
    return result;
  }

  private async withAttempts(rows: DeliveryRow[]): Promise<WebhookDelivery[]> {
    if (rows.length === 0) return [];
    const attempts = await this.database.query<AttemptRow>(
      `SELECT a.delivery_id, a.attempted_at, a.status_code, a.latency_ms, a.response_excerpt, a.error
         FROM unnest($1::text[]) AS p(id)
         CROSS JOIN LATERAL (
           SELECT * FROM webhook_attempts w WHERE w.delivery_id = p.id ORDER BY w.attempted_at DESC, w.id DESC LIMIT ${LAST_ATTEMPTS}
         ) a
        ORDER BY a.attempted_at DESC, a.id DESC`,
      [rows.map((r) => r.id)],
    );
    const byDelivery = new Map<string, WebhookAttempt[]>();
    for (const a of attempts) {
      const list = byDelivery.get(a.delivery_id) ?? [];
      list.push({ attemptedAt: a.attempted_at, statusCode: a.status_code, latencyMs: a.latency_ms, responseExcerpt: a.response_excerpt, error: a.error });
      byDelivery.set(a.delivery_id, list);
    }
    return rows.map((r) => ({
      id: r.id,
      eventId: r.event_id,
      eventType: r.event_type,
      eventSeq: r.event_seq === null ? null : Number(r.event_seq),
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      lastStatusCode: r.last_status_code,
      lastError: r.last_error,
      createdAt: r.created_at,
      deliveredAt: r.delivered_at,
      lastAttempts: byDelivery.get(r.id) ?? [],
    }));
  }

  /** The endpoint's deliveries, newest first, each with its latest attempts. */
  async deliveries(accountId: string, id: string, options: ListingRequest & { status?: DeliveryStatus | undefined }): Promise<Listing<WebhookDelivery>> {
    await this.endpointRow(this.database, accountId, id);
    const where = ['d.endpoint_id = $1', 'd.account_id = $2'];
    const params: unknown[] = [id, accountId];
    if (options.status) {
      params.push(options.status);
      where.push('d.status = $3');
    }
    const listing = await this.lister.list<DeliveryRow>(
      {
        kind: 'webhook-deliveries',
        table: 'webhook_deliveries d',
        alias: 'd',
        where,
        params,
        decorate: (page) => `${DELIVERY_COLUMNS} FROM ${page} JOIN events e ON e.id = d.event_id ORDER BY d.created_at DESC NULLS LAST, d.id DESC NULLS LAST`,
      },
      options,
    );
    return { data: await this.withAttempts(listing.data), meta: listing.meta };
  }

  /**
   * Queues one delivery again now (a failed one, or a succeeded one to receive it again); its
   * attempt count and history are kept. 409 if it is still waiting (PENDING).
   */
  async retryDelivery(accountId: string, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const updated = await this.database.query<{ id: string }>(
      `UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = now(), claimed_by = NULL, claimed_until = NULL
        WHERE id = $1 AND endpoint_id = $2 AND account_id = $3 AND status <> 'PENDING' RETURNING id`,
      [deliveryId, id, accountId],
    );
    if (updated.length === 0) {
      await this.endpointRow(this.database, accountId, id);
      const [existing] = await this.database.query<{ status: DeliveryStatus }>(
        'SELECT status FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 AND account_id = $3',
        [deliveryId, id, accountId],
      );
      if (!existing) throw new AppError('NOT_FOUND', 'Webhook delivery not found');
      throw new AppError('CONFLICT', 'The delivery is already waiting to be sent (PENDING); it is retried on its schedule', { status: existing.status });
    }
    this.wakeWorker();
    const rows = await this.database.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.id = $1`, [deliveryId]);
    const [delivery] = await this.withAttempts(rows);
    return delivery!;
  }

  /** Queues again, now, every FAILED delivery of the endpoint created at or after `since`. */
  async replay(accountId: string, id: string, since: Date): Promise<{ requeued: number }> {
    await this.endpointRow(this.database, accountId, id);
    const [row] = await this.database.query<{ n: number }>(
      `WITH requeued AS (
         UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = now(), claimed_by = NULL, claimed_until = NULL
          WHERE endpoint_id = $1 AND account_id = $2 AND status = 'FAILED' AND created_at >= $3
         RETURNING 1)
       SELECT count(*)::int AS n FROM requeued`,
      [id, accountId, since],
    );
    const requeued = row?.n ?? 0;
    if (requeued > 0) this.wakeWorker();
    return { requeued };
  }
}
