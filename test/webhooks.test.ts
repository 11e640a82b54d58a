/**
 * The webhook endpoints API through the real app (no worker: deliveries stay where the API put
 * them): creating, reading, changing and deleting endpoints; the secret (shown at creation and
 * by /secret only) and its rotation; validation and SSRF refusals of URLs; the plan's limit on
 * active endpoints; test events, the delivery log, retry and replay; tenancy and scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { call, expectError, expectFieldError, expectOk, ISO_MS, type DataBody, type PageBody } from './messaging-helpers.js';

interface WebhookBody {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  active: boolean;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}
interface CreatedWebhookBody extends WebhookBody {
  secret: string;
}
interface SecretBody {
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: string | null;
}
interface AttemptBody {
  attemptedAt: string;
  statusCode: number | null;
  latencyMs: number;
  responseExcerpt: string | null;
  error: string | null;
}
interface DeliveryBody {
  id: string;
  eventId: string;
  eventType: string;
  eventSeq: number | null;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  attempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  lastAttempts: AttemptBody[];
}
interface TestEventBody {
  eventId: string;
  eventSeq: null;
  deliveryId: string;
}

/** A public address literal: accepted without DNS (no worker runs here, so nothing is sent to it). */
const PUBLIC_URL = 'https://1.1.1.1/hooks/waygate';
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const WEBHOOK_KEYS = ['active', 'createdAt', 'description', 'disabledReason', 'events', 'health', 'id', 'updatedAt', 'url'];

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

async function createWebhook(tenant: Tenant, payload: Record<string, unknown> = {}, app: TestContext = ctx): Promise<CreatedWebhookBody> {
  return expectOk<DataBody<CreatedWebhookBody>>(await call(app, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, ...payload }), 201).data;
}

async function sendTest(tenant: Tenant, id: string): Promise<TestEventBody> {
  return expectOk<DataBody<TestEventBody>>(await call(ctx, tenant, 'POST', `/webhooks/${id}/test`), 202).data;
}

async function deliveries(tenant: Tenant, id: string, query = ''): Promise<PageBody<DeliveryBody>> {
  return expectOk<PageBody<DeliveryBody>>(await call(ctx, tenant, 'GET', `/webhooks/${id}/deliveries${query}`));
}

async function setDelivery(id: string, status: 'PENDING' | 'SUCCEEDED' | 'FAILED', extra: { attempts?: number; createdAt?: string } = {}): Promise<void> {
  await ctx.database.query(
    `UPDATE webhook_deliveries SET status = $2, attempts = $3, next_attempt_at = CASE WHEN $2 = 'PENDING' THEN now() END,
            last_status_code = CASE WHEN $2 = 'FAILED' THEN 500 WHEN $2 = 'SUCCEEDED' THEN 200 END,
            last_error = CASE WHEN $2 = 'FAILED' THEN 'HTTP 500' END,
            delivered_at = CASE WHEN $2 = 'SUCCEEDED' THEN now() END,
            created_at = COALESCE($4::timestamptz, created_at)
      WHERE id = $1`,
    [id, status, extra.attempts ?? 8, extra.createdAt ?? null],
  );
}

describe('creating and reading endpoints', () => {
  it('POST /webhooks answers 201 with the endpoint and its secret', async () => {
    const tenant = await createTenant(ctx);
    const before = Date.now();
    const response = await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, description: '  Orders service  ' });
    const body = expectOk<{ success: true; data: CreatedWebhookBody }>(response, 201);
    expect(body.success).toBe(true);
    expect(Object.keys(body.data).sort()).toEqual([...WEBHOOK_KEYS, 'secret'].sort());
    expect(body.data).toMatchObject({ url: PUBLIC_URL, description: 'Orders service', events: [], active: true, disabledReason: null });
    expect(body.data.id).toMatch(/^wh_/);
    expect(body.data.createdAt).toMatch(ISO_MS);
    expect(body.data.updatedAt).toMatch(ISO_MS);
    expect(new Date(body.data.createdAt).getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(body.data.secret).toMatch(SECRET);
    expect(Buffer.from(body.data.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
  });

  it('never shows the secret in GET /webhooks/:id or the listing; /secret shows it', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    const read = await call(ctx, tenant, 'GET', `/webhooks/${created.id}`);
    const { secret, ...record } = created;
    expect(expectOk<DataBody<WebhookBody>>(read)).toEqual({ success: true, data: record });
    expect(read.body).not.toContain(secret);
    const list = await call(ctx, tenant, 'GET', '/webhooks');
    expect(expectOk<PageBody<WebhookBody>>(list)).toEqual({ success: true, data: [record], meta: { total: 1, page: 1, limit: 50 } });
    expect(list.body).not.toContain(secret);
    expect(list.body).not.toContain('whsec_');
    const shown = expectOk<DataBody<SecretBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}/secret`));
    expect(shown).toEqual({ success: true, data: { secret, previousSecret: null, previousSecretExpiresAt: null } });
  });

  it('GET /webhooks is paginated, newest first, and answers at /v1 too', async () => {
    const tenant = await createTenant(ctx);
    const empty = expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/webhooks'));
    expect(empty).toEqual({ success: true, data: [], meta: { total: 0, page: 1, limit: 50 } });
    const first = await createWebhook(tenant, { description: 'first' });
    const second = await createWebhook(tenant, { description: 'second' });
    const third = await createWebhook(tenant, { description: 'third' });
    const all = expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/v1/webhooks'));
    expect(all.data.map((w) => w.id)).toEqual([third.id, second.id, first.id]);
    const page2 = expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/webhooks?page=2&limit=2'));
    expect(page2.data.map((w) => w.id)).toEqual([first.id]);
    expect(page2.meta).toEqual({ total: 3, page: 2, limit: 2 });
    const clamped = expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/webhooks?limit=500'));
    expect(clamped.meta.limit).toBe(100);
    expectFieldError(await call(ctx, tenant, 'GET', '/webhooks?page=0'), 'page');
    expectFieldError(await call(ctx, tenant, 'GET', '/webhooks?limit=abc'), 'limit');
  });

  it('keeps the subscribed event types, de-duplicated; absent or empty means every type', async () => {
    const tenant = await createTenant(ctx);
    const some = await createWebhook(tenant, { events: ['message.status', 'device.status', 'message.status'] });
    expect(some.events).toEqual(['message.status', 'device.status']);
    const all = await createWebhook(tenant, { events: [] });
    expect(all.events).toEqual([]);
    const every = await createWebhook(tenant, { events: ['message.received', 'message.status', 'device.status', 'bulk_job.completed'] });
    expect(every.events).toHaveLength(4);
  });

  it('creates an inactive endpoint when asked', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant, { active: false, description: null });
    expect(created).toMatchObject({ active: false, description: null });
  });
});

describe('changing and deleting endpoints', () => {
  it('PATCH changes url, events, description and active, and moves updatedAt', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant, { description: 'old', events: ['message.status'] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const patched = expectOk<DataBody<WebhookBody>>(
      await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { url: 'https://8.8.8.8/new', events: ['device.status', 'bulk_job.completed'], description: 'new' }),
    ).data;
    expect(patched).toMatchObject({ id: created.id, url: 'https://8.8.8.8/new', events: ['device.status', 'bulk_job.completed'], description: 'new', active: true });
    expect(patched.createdAt).toBe(created.createdAt);
    expect(new Date(patched.updatedAt).getTime()).toBeGreaterThan(new Date(created.updatedAt).getTime());
    // Only the fields given change.
    const off = expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { active: false })).data;
    expect(off).toMatchObject({ url: 'https://8.8.8.8/new', events: ['device.status', 'bulk_job.completed'], description: 'new', active: false });
    const cleared = expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { description: null, events: [] })).data;
    expect(cleared).toMatchObject({ description: null, events: [], active: false });
    expect(expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}`)).data).toEqual(cleared);
    // The secret is not touched by a PATCH.
    const secret = expectOk<DataBody<SecretBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}/secret`)).data;
    expect(secret.secret).toBe(created.secret);
  });

  it('PATCH validates its body and leaves the endpoint unchanged on a 400', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    expectError(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, {}), 400, 'VALIDATION_ERROR');
    expectFieldError(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { secret: 'whsec_x' }), 'secret');
    expectFieldError(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { active: 'yes' }), 'active');
    expectFieldError(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { events: ['message.sent'] }), 'events[0]');
    const refused = expectFieldError(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { url: 'http://127.0.0.1/', description: 'x' }), 'url');
    expect(refused.message).toContain('ALLOW_PRIVATE_URLS');
    const { secret: _secret, ...record } = created;
    expect(expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}`)).data).toEqual(record);
  });

  it('DELETE removes the endpoint with its deliveries; the events stay', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    const test = await sendTest(tenant, created.id);
    const removed = await call(ctx, tenant, 'DELETE', `/webhooks/${created.id}`);
    expect(expectOk(removed)).toEqual({ success: true });
    expectError(await call(ctx, tenant, 'GET', `/webhooks/${created.id}`), 404, 'NOT_FOUND');
    expectError(await call(ctx, tenant, 'DELETE', `/webhooks/${created.id}`), 404, 'NOT_FOUND');
    const [left] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = $1', [test.deliveryId]);
    expect(left?.n).toBe(0);
    const [event] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE id = $1', [test.eventId]);
    expect(event?.n).toBe(1);
    expect(expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/webhooks')).meta.total).toBe(0);
  });
});

describe('secrets', () => {
  it('rotation gives a new secret and keeps the previous one for 24 hours', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    const before = Date.now();
    const rotated = expectOk<DataBody<SecretBody>>(await call(ctx, tenant, 'POST', `/webhooks/${created.id}/rotate-secret`)).data;
    expect(rotated.secret).toMatch(SECRET);
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.previousSecret).toBe(created.secret);
    expect(rotated.previousSecretExpiresAt).toMatch(ISO_MS);
    const expiresIn = new Date(rotated.previousSecretExpiresAt!).getTime() - before;
    expect(expiresIn).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(expiresIn).toBeLessThan(24 * 3600_000 + 60_000);
    expect(expectOk<DataBody<SecretBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}/secret`)).data).toEqual(rotated);
    // Still never in a read.
    const read = await call(ctx, tenant, 'GET', `/webhooks/${created.id}`);
    expect(read.body).not.toContain(rotated.secret);
    expect(read.body).not.toContain(created.secret);

    // A second rotation: the secret it replaces becomes the previous one.
    const again = expectOk<DataBody<SecretBody>>(await call(ctx, tenant, 'POST', `/v1/webhooks/${created.id}/rotate-secret`)).data;
    expect(again.previousSecret).toBe(rotated.secret);
    expect(new Set([created.secret, rotated.secret, again.secret]).size).toBe(3);
  });

  it('an expired previous secret is no longer shown', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    await call(ctx, tenant, 'POST', `/webhooks/${created.id}/rotate-secret`);
    await ctx.database.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [created.id]);
    const shown = expectOk<DataBody<SecretBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}/secret`)).data;
    expect(shown.previousSecret).toBeNull();
    expect(shown.previousSecretExpiresAt).toBeNull();
    expect(shown.secret).not.toBe(created.secret);
  });
});

describe('validation', () => {
  it('refuses a missing, malformed or non-http url', async () => {
    const tenant = await createTenant(ctx);
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', {}), 'url');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: '' }), 'url');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: 42 }), 'url');
    const malformed = expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: 'not a url' }), 'url');
    expect(malformed.message).toMatch(/valid URL/);
    const scheme = expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: 'ftp://1.1.1.1/drop' }), 'url');
    expect(scheme.message).toMatch(/http/);
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: 'javascript:alert(1)' }), 'url');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: 'https://user:pw@1.1.1.1/' }), 'url');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: `https://1.1.1.1/${'a'.repeat(2100)}` }), 'url');
  });

  it('refuses unknown event types (webhook.test included), unknown fields and bad types', async () => {
    const tenant = await createTenant(ctx);
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, events: ['message.sent'] }), 'events[0]');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, events: ['message.status', 'webhook.test'] }), 'events[1]');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, events: 'message.status' }), 'events');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, secret: 'whsec_mine' }), 'secret');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, active: 'true' }), 'active');
    expectFieldError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL, description: 'x'.repeat(501) }), 'description');
    expect(expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/webhooks')).meta.total).toBe(0);
  });

  it('with the default config refuses private, loopback and link-local addresses, naming ALLOW_PRIVATE_URLS', async () => {
    const tenant = await createTenant(ctx);
    for (const url of ['http://127.0.0.1:8080/', 'http://localhost/', 'http://[::1]/', 'http://10.0.0.1/', 'http://169.254.169.254/', 'http://[::ffff:127.0.0.1]/', 'http://[::127.0.0.1]/', 'http://[::7f00:1]/', 'http://[fec0::1]/']) {
      const response = await call(ctx, tenant, 'POST', '/webhooks', { url });
      const detail = expectFieldError(response, 'url');
      expect(detail.message, url).toContain('ALLOW_PRIVATE_URLS');
      expect(response.json<{ error: { message: string } }>().error.message, url).toContain('ALLOW_PRIVATE_URLS');
    }
    expect(expectOk<PageBody<WebhookBody>>(await call(ctx, tenant, 'GET', '/webhooks')).meta.total).toBe(0);
  });
});

describe('with ALLOW_PRIVATE_URLS=true', () => {
  let open: TestContext;
  // Its own app (and database): booting one takes a while, so it happens in a hook, not in the test.
  beforeAll(async () => {
    open = await createTestApp({ ALLOW_PRIVATE_URLS: 'true' });
  });
  afterAll(async () => open.close());

  it('accepts loopback URLs, and still checks the scheme', async () => {
    const tenant = await createTenant(open);
    for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost:3001/hook', 'http://[::1]/']) {
      const created = await createWebhook(tenant, { url }, open);
      expect(created.url).toBe(url);
    }
    expectFieldError(await call(open, tenant, 'POST', '/webhooks', { url: 'file:///etc/passwd' }), 'url');
  });
});

describe('plan limit', () => {
  it('counts active endpoints only: free allows one; activating a second one is 403 PLAN_LIMIT', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    const first = await createWebhook(tenant);
    const limited = expectError(await call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL }), 403, 'PLAN_LIMIT');
    expect(limited.error.details).toEqual({ limit: 1, used: 1 });
    expect(limited.error.message).toMatch(/1 active webhook endpoint/);
    // An inactive endpoint does not count.
    const spare = await createWebhook(tenant, { active: false });
    expect(spare.active).toBe(false);
    const activate = expectError(await call(ctx, tenant, 'PATCH', `/webhooks/${spare.id}`, { active: true }), 403, 'PLAN_LIMIT');
    expect(activate.error.details).toEqual({ limit: 1, used: 1 });
    expect(expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'GET', `/webhooks/${spare.id}`)).data.active).toBe(false);
    // Changing an active endpoint (or setting active: true again) is not an addition.
    expectOk(await call(ctx, tenant, 'PATCH', `/webhooks/${first.id}`, { active: true, description: 'still the one' }));
    // Switching the first off frees the slot.
    expectOk(await call(ctx, tenant, 'PATCH', `/webhooks/${first.id}`, { active: false }));
    expect(expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'PATCH', `/webhooks/${spare.id}`, { active: true })).data.active).toBe(true);
    expectError(await call(ctx, tenant, 'PATCH', `/webhooks/${first.id}`, { active: true }), 403, 'PLAN_LIMIT');
    // Deleting frees it too.
    expectOk(await call(ctx, tenant, 'DELETE', `/webhooks/${spare.id}`));
    expectOk(await call(ctx, tenant, 'PATCH', `/webhooks/${first.id}`, { active: true }));
  });

  it('the yearly plan allows two; unlimited has no limit', async () => {
    const yearly = await createTenant(ctx, { plan: 'yearly' });
    await createWebhook(yearly);
    await createWebhook(yearly);
    expect(expectError(await call(ctx, yearly, 'POST', '/webhooks', { url: PUBLIC_URL }), 403, 'PLAN_LIMIT').error.details).toEqual({ limit: 2, used: 2 });
    const unlimited = await createTenant(ctx);
    for (let i = 0; i < 5; i++) await createWebhook(unlimited);
  });

  it('cannot be raced: of concurrent creations on the free plan exactly one succeeds', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    const responses = await Promise.all(Array.from({ length: 6 }, () => call(ctx, tenant, 'POST', '/webhooks', { url: PUBLIC_URL })));
    expect(responses.filter((r) => r.statusCode === 201)).toHaveLength(1);
    for (const response of responses.filter((r) => r.statusCode !== 201)) expectError(response, 403, 'PLAN_LIMIT');
    const [active] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1 AND active', [tenant.accountId]);
    expect(active?.n).toBe(1);
  });

  it('re-activating an endpoint that Waygate turned off clears disabledReason', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    const created = await createWebhook(tenant);
    await ctx.database.query(`UPDATE webhook_endpoints SET active = false, disabled_reason = 'The endpoint answered 410 Gone' WHERE id = $1`, [created.id]);
    const off = expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'GET', `/webhooks/${created.id}`)).data;
    expect(off).toMatchObject({ active: false, disabledReason: 'The endpoint answered 410 Gone' });
    // Other changes keep the reason.
    expect(expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { description: 'fixed' })).data.disabledReason).toBe(
      'The endpoint answered 410 Gone',
    );
    const on = expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'PATCH', `/webhooks/${created.id}`, { active: true })).data;
    expect(on).toMatchObject({ active: true, disabledReason: null });
  });
});

describe('test events and the delivery log', () => {
  it('POST /webhooks/:id/test queues one webhook.test event for this endpoint only, listed PENDING in /deliveries', async () => {
    const tenant = await createTenant(ctx);
    const target = await createWebhook(tenant);
    const other = await createWebhook(tenant);
    const test = await sendTest(tenant, target.id);
    expect(test.eventId).toMatch(/^evt_/);
    expect(test.deliveryId).toMatch(/^whd_/);
    // Outside the account's sequence: the other endpoint must not see a hole.
    expect(test.eventSeq).toBeNull();

    const [event] = await ctx.database.query<{ type: string; seq: number | null; data: unknown; account_id: string }>('SELECT * FROM events WHERE id = $1', [test.eventId]);
    expect(event).toMatchObject({ type: 'webhook.test', account_id: tenant.accountId, seq: null, data: { endpointId: target.id, message: 'This is a test event from Waygate' } });

    const log = await deliveries(tenant, target.id);
    expect(log.meta).toEqual({ total: 1, totalExact: true, page: 1, limit: 50, nextCursor: null });
    const [delivery] = log.data;
    expect(delivery).toEqual({
      id: test.deliveryId,
      eventId: test.eventId,
      eventType: 'webhook.test',
      eventSeq: test.eventSeq,
      status: 'PENDING',
      attempts: 0,
      nextAttemptAt: expect.stringMatching(ISO_MS),
      lastStatusCode: null,
      lastError: null,
      createdAt: expect.stringMatching(ISO_MS),
      deliveredAt: null,
      lastAttempts: [],
    });
    expect((await deliveries(tenant, other.id)).data).toEqual([]);

    // Another test is another event; neither takes a seq, and GET /events lists neither.
    const next = await sendTest(tenant, target.id);
    expect(next.eventId).not.toBe(test.eventId);
    expect(next.eventSeq).toBeNull();
    const listed = await ctx.app.inject({ method: 'GET', url: '/events', headers: { 'x-api-key': tenant.token } });
    expect(listed.statusCode).toBe(200);
    expect(listed.json<{ data: unknown[]; meta: { lastSeq: number } }>()).toMatchObject({ data: [], meta: { lastSeq: 0 } });
  });

  it('a test of an inactive endpoint is 409 (only active endpoints are delivered to)', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant, { active: false });
    expectError(await call(ctx, tenant, 'POST', `/webhooks/${created.id}/test`), 409, 'CONFLICT');
    const [events] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE account_id = $1', [tenant.accountId]);
    expect(events?.n).toBe(0);
  });

  it('lists deliveries newest first, paginated, filtered by status, each with its 5 newest attempts', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    const tests: TestEventBody[] = [];
    for (let i = 0; i < 3; i++) tests.push(await sendTest(tenant, created.id));
    const log = await deliveries(tenant, created.id);
    expect(log.data.map((d) => d.id)).toEqual(tests.map((t) => t.deliveryId).reverse());
    expect(log.data.map((d) => d.eventSeq)).toEqual(tests.map((t) => t.eventSeq).reverse());
    const page2 = await deliveries(tenant, created.id, '?page=2&limit=2');
    expect(page2.data.map((d) => d.id)).toEqual([tests[0]!.deliveryId]);
    expect(page2.meta).toEqual({ total: 3, totalExact: true, page: 2, limit: 2, nextCursor: null });

    // Six attempts recorded (as the worker would): the 5 newest are shown, newest first.
    const failing = tests[1]!.deliveryId;
    for (let i = 0; i < 6; i++) {
      await ctx.database.query(
        `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_excerpt, error)
         VALUES ($1, now() - ($2::int * interval '1 minute'), $3, $4, $5, $6)`,
        [failing, 10 - i, i === 5 ? null : 500 + i, 10 * i, i === 5 ? null : `oops ${i}`, i === 5 ? 'connect ECONNREFUSED' : 'HTTP ' + (500 + i)],
      );
    }
    await setDelivery(failing, 'FAILED', { attempts: 6 });
    const withAttempts = (await deliveries(tenant, created.id)).data.find((d) => d.id === failing)!;
    expect(withAttempts).toMatchObject({ status: 'FAILED', attempts: 6, lastStatusCode: 500, lastError: 'HTTP 500', nextAttemptAt: null });
    expect(withAttempts.lastAttempts).toHaveLength(5);
    expect(withAttempts.lastAttempts[0]).toEqual({ attemptedAt: expect.stringMatching(ISO_MS), statusCode: null, latencyMs: 50, responseExcerpt: null, error: 'connect ECONNREFUSED' });
    expect(withAttempts.lastAttempts.map((a) => a.statusCode)).toEqual([null, 504, 503, 502, 501]);
    const times = withAttempts.lastAttempts.map((a) => new Date(a.attemptedAt).getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const failed = await deliveries(tenant, created.id, '?status=FAILED');
    expect(failed.data.map((d) => d.id)).toEqual([failing]);
    expect(failed.meta.total).toBe(1);
    expect((await deliveries(tenant, created.id, '?status=PENDING')).meta.total).toBe(2);
    expectFieldError(await call(ctx, tenant, 'GET', `/webhooks/${created.id}/deliveries?status=LOST`), 'status');
  });
});

describe('retry and replay', () => {
  it('retry puts a FAILED delivery back to PENDING now, keeping its attempts; 409 while PENDING', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    const test = await sendTest(tenant, created.id);
    const url = `/webhooks/${created.id}/deliveries/${test.deliveryId}/retry`;
    const pending = expectError(await call(ctx, tenant, 'POST', url), 409, 'CONFLICT');
    expect(pending.error.details).toEqual({ status: 'PENDING' });

    await setDelivery(test.deliveryId, 'FAILED', { attempts: 8 });
    const before = Date.now();
    const retried = expectOk<DataBody<DeliveryBody>>(await call(ctx, tenant, 'POST', url), 202).data;
    expect(retried).toMatchObject({ id: test.deliveryId, status: 'PENDING', attempts: 8, lastStatusCode: 500, eventType: 'webhook.test' });
    expect(Math.abs(new Date(retried.nextAttemptAt!).getTime() - before)).toBeLessThan(5_000);
    expect((await deliveries(tenant, created.id)).data[0]).toMatchObject({ id: test.deliveryId, status: 'PENDING', attempts: 8 });
    expectError(await call(ctx, tenant, 'POST', url), 409, 'CONFLICT');

    // A delivered one can be sent again too.
    await setDelivery(test.deliveryId, 'SUCCEEDED', { attempts: 9 });
    expect(expectOk<DataBody<DeliveryBody>>(await call(ctx, tenant, 'POST', `/v1${url}`), 202).data).toMatchObject({ status: 'PENDING', attempts: 9 });

    expectError(await call(ctx, tenant, 'POST', `/webhooks/${created.id}/deliveries/whd_nope/retry`), 404, 'NOT_FOUND');
    // A delivery of another endpoint of the same account is not this endpoint's.
    const other = await createWebhook(tenant);
    expectError(await call(ctx, tenant, 'POST', `/webhooks/${other.id}/deliveries/${test.deliveryId}/retry`), 404, 'NOT_FOUND');
  });

  it('replay requeues every FAILED delivery of the endpoint created since the given time', async () => {
    const tenant = await createTenant(ctx);
    const created = await createWebhook(tenant);
    const other = await createWebhook(tenant);
    const [recentFailed, oldFailed, succeeded, pending] = [
      await sendTest(tenant, created.id),
      await sendTest(tenant, created.id),
      await sendTest(tenant, created.id),
      await sendTest(tenant, created.id),
    ];
    const otherFailed = await sendTest(tenant, other.id);
    await setDelivery(recentFailed!.deliveryId, 'FAILED');
    await setDelivery(oldFailed!.deliveryId, 'FAILED', { createdAt: '2020-06-01T00:00:00Z' });
    await setDelivery(succeeded!.deliveryId, 'SUCCEEDED');
    await setDelivery(otherFailed.deliveryId, 'FAILED');
    void pending;

    const replay = (since: string) => call(ctx, tenant, 'POST', `/webhooks/${created.id}/replay`, { since });
    const since = new Date(Date.now() - 3600_000).toISOString();
    expect(expectOk<DataBody<{ requeued: number }>>(await replay(since), 202)).toEqual({ success: true, data: { requeued: 1 } });
    const statuses = async (): Promise<Record<string, string>> =>
      Object.fromEntries((await deliveries(tenant, created.id)).data.map((d) => [d.id, d.status]));
    expect(await statuses()).toEqual({
      [recentFailed!.deliveryId]: 'PENDING',
      [oldFailed!.deliveryId]: 'FAILED',
      [succeeded!.deliveryId]: 'SUCCEEDED',
      [pending!.deliveryId]: 'PENDING',
    });
    // Nothing left to requeue since then; going further back takes the old one.
    expect(expectOk<DataBody<{ requeued: number }>>(await replay(since), 202).data.requeued).toBe(0);
    expect(expectOk<DataBody<{ requeued: number }>>(await replay('2020-01-01T00:00:00+07:00'), 202).data.requeued).toBe(1);
    expect((await statuses())[oldFailed!.deliveryId]).toBe('PENDING');
    const [attempts] = await ctx.database.query<{ attempts: number }>('SELECT attempts FROM webhook_deliveries WHERE id = $1', [oldFailed!.deliveryId]);
    expect(attempts?.attempts).toBe(8);
    // The other endpoint's failure is untouched.
    expect((await deliveries(tenant, other.id)).data[0]).toMatchObject({ id: otherFailed.deliveryId, status: 'FAILED' });

    expectFieldError(await replay('yesterday'), 'since');
    expectFieldError(await replay('2025-01-01T00:00:00'), 'since');
    expectFieldError(await call(ctx, tenant, 'POST', `/webhooks/${created.id}/replay`, {}), 'since');
    expectFieldError(await call(ctx, tenant, 'POST', `/webhooks/${created.id}/replay`, { since, status: 'FAILED' }), 'status');
  });
});

describe('tenancy and scopes', () => {
  it("answers 404 for another account's endpoint on every route, and changes nothing", async () => {
    const alice = await createTenant(ctx);
    const bob = await createTenant(ctx);
    const endpoint = await createWebhook(alice);
    const test = await sendTest(alice, endpoint.id);
    await setDelivery(test.deliveryId, 'FAILED');
    const id = endpoint.id;
    const requests: [Parameters<typeof call>[2], string, unknown?][] = [
      ['GET', `/webhooks/${id}`],
      ['PATCH', `/webhooks/${id}`, { active: false }],
      ['DELETE', `/webhooks/${id}`],
      ['GET', `/webhooks/${id}/secret`],
      ['POST', `/webhooks/${id}/rotate-secret`],
      ['POST', `/webhooks/${id}/test`],
      ['GET', `/webhooks/${id}/deliveries`],
      ['POST', `/webhooks/${id}/deliveries/${test.deliveryId}/retry`],
      ['POST', `/webhooks/${id}/replay`, { since: '2020-01-01T00:00:00Z' }],
    ];
    for (const [method, url, payload] of requests) {
      const response = await call(ctx, bob, method, url, payload);
      const body = expectError(response, 404, 'NOT_FOUND');
      expect(response.body, `${method} ${url}`).not.toContain(endpoint.secret);
      expect(body.error.message).toMatch(/not found/);
    }
    // Bob's own endpoint with Alice's delivery id is still a 404.
    const own = await createWebhook(bob);
    expectError(await call(ctx, bob, 'POST', `/webhooks/${own.id}/deliveries/${test.deliveryId}/retry`), 404, 'NOT_FOUND');
    expect(expectOk<PageBody<WebhookBody>>(await call(ctx, bob, 'GET', '/webhooks')).data.map((w) => w.id)).toEqual([own.id]);

    // Alice's endpoint is as it was.
    const secret = expectOk<DataBody<SecretBody>>(await call(ctx, alice, 'GET', `/webhooks/${id}/secret`)).data;
    expect(secret).toEqual({ secret: endpoint.secret, previousSecret: null, previousSecretExpiresAt: null });
    expect(expectOk<DataBody<WebhookBody>>(await call(ctx, alice, 'GET', `/webhooks/${id}`)).data.active).toBe(true);
    expect((await deliveries(alice, id)).data).toEqual([expect.objectContaining({ id: test.deliveryId, status: 'FAILED' })]);
    const [events] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE account_id = $1', [bob.accountId]);
    expect(events?.n).toBe(0);
  });

  it('needs webhooks:read to read and webhooks:write to change (and to see the secret)', async () => {
    const owner = await createTenant(ctx);
    const endpoint = await createWebhook(owner);
    const test = await sendTest(owner, endpoint.id);
    const { token } = await ctx.services.tokens.create(owner.accountId, { name: 'read only', scopes: ['webhooks:read'] });
    const reader: Tenant = { ...owner, token, headers: { 'x-api-key': token } };
    expectOk(await call(ctx, reader, 'GET', '/webhooks'));
    expectOk(await call(ctx, reader, 'GET', `/webhooks/${endpoint.id}`));
    expectOk(await call(ctx, reader, 'GET', `/webhooks/${endpoint.id}/deliveries`));
    const writes: [Parameters<typeof call>[2], string, unknown?][] = [
      ['POST', '/webhooks', { url: PUBLIC_URL }],
      ['PATCH', `/webhooks/${endpoint.id}`, { active: false }],
      ['DELETE', `/webhooks/${endpoint.id}`],
      ['GET', `/webhooks/${endpoint.id}/secret`],
      ['POST', `/webhooks/${endpoint.id}/rotate-secret`],
      ['POST', `/webhooks/${endpoint.id}/test`],
      ['POST', `/webhooks/${endpoint.id}/deliveries/${test.deliveryId}/retry`],
      ['POST', `/webhooks/${endpoint.id}/replay`, { since: '2020-01-01T00:00:00Z' }],
    ];
    for (const [method, url, payload] of writes) {
      const response = await call(ctx, reader, method, url, payload);
      const body = expectError(response, 403, 'FORBIDDEN');
      expect(body.error.details, `${method} ${url}`).toEqual({ requiredScope: 'webhooks:write' });
      expect(response.body).not.toContain(endpoint.secret);
    }

    const { token: other } = await ctx.services.tokens.create(owner.accountId, { name: 'contacts', scopes: ['contacts:read'] });
    const outsider: Tenant = { ...owner, token: other, headers: { 'x-api-key': other } };
    expect(expectError(await call(ctx, outsider, 'GET', '/webhooks'), 403, 'FORBIDDEN').error.details).toEqual({ requiredScope: 'webhooks:read' });
    expectError(await call(ctx, outsider, 'GET', `/webhooks/${endpoint.id}/deliveries`), 403, 'FORBIDDEN');
    // Nothing changed.
    expect(expectOk<PageBody<WebhookBody>>(await call(ctx, owner, 'GET', '/webhooks')).data).toEqual([expect.objectContaining({ id: endpoint.id, active: true })]);
    expectError(await ctx.app.inject({ method: 'GET', url: '/webhooks' }), 401, 'UNAUTHORIZED');
  });
});
