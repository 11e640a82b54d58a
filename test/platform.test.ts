import { validate as validateOpenApi } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../src/events/event-store.js';
import { arrayLiteral, encodeParameters, isoTimestamp } from '../src/platform/pg-parameters.js';
import { createTenant, createTestApp, type TestContext } from './helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

describe('errors', () => {
  it('answers unknown routes with NOT_FOUND in the error body', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'GET', url: '/nope', headers: tenant.headers });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  });

  it('answers malformed JSON with 400 VALIDATION_ERROR', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/groups',
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', message: 'The request body is not valid JSON' } });
  });

  it('lists every schema failure as field details', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'POST', url: '/contacts', headers: tenant.headers, payload: { name: 5, extra: 1 } });
    expect(response.statusCode).toBe(400);
    const details = response.json().error.details as { field: string; message: string }[];
    expect(details.map((d) => d.field).sort()).toEqual(['extra', 'name', 'phoneNumber']);
  });

  it('answers a body over 5 MB with 413 PAYLOAD_TOO_LARGE', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/contacts',
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(5 * 1024 * 1024 + 10), phoneNumber: '14155550123' }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('answers an unsupported content type with 415', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/contacts',
      headers: { ...tenant.headers, 'content-type': 'application/xml' },
      payload: '<contact/>',
    });
    expect(response.statusCode).toBe(415);
    expect(response.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('hides internals of a 500 and gives a request id', async () => {
    const tenant = await createTenant(ctx);
    const original = ctx.services.contacts.get.bind(ctx.services.contacts);
    ctx.services.contacts.get = async () => {
      throw new Error('secret database detail');
    };
    try {
      const response = await ctx.app.inject({ method: 'GET', url: '/contacts/ct_x', headers: tenant.headers });
      expect(response.statusCode).toBe(500);
      const body = response.json();
      expect(body.error.code).toBe('INTERNAL');
      expect(response.body).not.toContain('secret database detail');
      expect(body.error.message).toContain(body.requestId);
    } finally {
      ctx.services.contacts.get = original;
    }
  });
});

describe('query parameters', () => {
  // What PostgreSQL reads from Waygate's encoding is what the caller passed, whichever driver.
  const awkward = ['plain', 'a "quoted" word', 'back\\slash', '\\"', '{braces}', 'comma, here', 'NULL', '', ' spaced ', 'ünïcödé ✓ 🎉', "it's"];
  const dates = [new Date('2026-12-06T17:09:20.006Z'), new Date('2026-12-06T17:09:20.906Z'), new Date('2026-12-06T17:09:21.000Z'), new Date('1970-01-01T00:00:00.000Z'), new Date('1969-12-31T23:59:59.999Z'), new Date('1000-01-01T00:00:00.000Z'), new Date('9999-12-31T23:59:59.999Z')];

  it('writes arrays of strings, numbers, booleans, nulls and dates that PostgreSQL reads back unchanged', async () => {
    const [row] = await ctx.database.query<{ texts: (string | null)[]; ints: number[]; flags: boolean[]; times: Date[] }>(
      'SELECT $1::text[] AS texts, $2::int[] AS ints, $3::bool[] AS flags, $4::timestamptz[] AS times',
      [arrayLiteral([...awkward, null]), arrayLiteral([0, -7, 2147483647]), arrayLiteral([true, false]), arrayLiteral(dates)],
    );
    expect(row!.texts).toEqual([...awkward, null]);
    expect(row!.ints).toEqual([0, -7, 2147483647]);
    expect(row!.flags).toEqual([true, false]);
    expect(row!.times.map((d) => d.getTime())).toEqual(dates.map((d) => d.getTime()));
  });

  it('writes a date as toISOString does, and leaves what it does not encode to the driver', () => {
    for (const date of [...dates, new Date('0001-01-01T00:00:00.000Z')]) expect(isoTimestamp(date)).toBe(date.toISOString());
    for (let i = 0; i < 2_000; i++) {
      const date = new Date(Date.UTC(2020, 0, 1) + Math.floor(Math.random() * 400 * 86_400_000));
      expect(isoTimestamp(date)).toBe(date.toISOString());
    }
    expect(isoTimestamp(new Date(Number.NaN))).toBeUndefined();
    expect(isoTimestamp(new Date('+010000-01-01T00:00:00Z'))).toBeUndefined();
    const nested = [['a'], ['b']];
    const objects = [{ a: 1 }];
    const buffer = Buffer.from('x');
    expect(encodeParameters([nested, objects, buffer, 'text', 5, null])).toEqual([nested, objects, buffer, 'text', 5, null]);
    expect(encodeParameters([[new Date(Number.NaN)]])).toEqual([[new Date(Number.NaN)]]);
  });

  it('passes an encoded array and date through every query path to the same rows', async () => {
    const ids = Array.from({ length: 1_000 }, (_, i) => `id "${i}" \\ ${i}`);
    const [row] = await ctx.database.query<{ n: number; last: string; at: Date }>(
      'SELECT cardinality($1::text[]) AS n, ($1::text[])[1000] AS last, $2::timestamptz AS at',
      [ids, dates[0]],
    );
    expect(row).toEqual({ n: 1_000, last: ids[999], at: dates[0] });
    const [prepared] = await ctx.database.queryPrepared<{ last: string }>({ name: 'test_parameters', text: 'SELECT ($1::text[])[2] AS last', values: [ids.slice(0, 2)] });
    expect(prepared!.last).toBe(ids[1]);
    const inTransaction = await ctx.database.transaction((tx) => tx.query<{ times: Date[] }>('SELECT $1::timestamptz[] AS times', [dates]));
    expect(inTransaction[0]!.times.map((d) => d.getTime())).toEqual(dates.map((d) => d.getTime()));
  });
});

describe('rate limiting', () => {
  it('sends RateLimit headers on every response and 429 with Retry-After past the limit, per account', async () => {
    const limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: '5' });
    try {
      const alice = await createTenant(limited);
      const bob = await createTenant(limited);
      for (let i = 0; i < 5; i++) {
        const response = await limited.app.inject({ method: 'GET', url: '/contacts', headers: alice.headers });
        expect(response.statusCode).toBe(200);
        expect(response.headers['ratelimit-limit']).toBe('5');
        expect(response.headers['ratelimit-remaining']).toBe(String(4 - i));
        expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThan(0);
      }
      const blocked = await limited.app.inject({ method: 'GET', url: '/v1/account', headers: alice.headers });
      expect(blocked.statusCode).toBe(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(blocked.headers['ratelimit-remaining']).toBe('0');
      expect(blocked.json()).toMatchObject({ success: false, error: { code: 'RATE_LIMITED', details: { limit: 5 } } });
      // Another account has its own budget.
      expect((await limited.app.inject({ method: 'GET', url: '/contacts', headers: bob.headers })).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('ops and docs', () => {
  it('answers /healthz and /readyz without a token', async () => {
    expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { database: 'ok' } });
  });

  it('serves Prometheus metrics', async () => {
    await ctx.app.inject({ method: 'GET', url: '/healthz' });
    const response = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/plain/);
    expect(response.body).toMatch(/waygate_http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(response.body).toContain('waygate_process_cpu_seconds_total');
    expect(response.body).toMatch(/waygate_queue_depth \d+/);
    expect(response.body).toMatch(/waygate_devices\{status="CONNECTED"\} \d+/);
  });

  it('serves interactive docs', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/docs/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/html/);
  });

  it('publishes an OpenAPI document that a validator accepts and that lists every route', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    const validation = await validateOpenApi(structuredClone(document));
    expect(validation.valid ? [] : validation.errors).toEqual([]);
    // The validator is not a rubber stamp: a broken copy is refused.
    const broken = structuredClone(document);
    broken.paths['/contacts'].get.responses['200'].content['application/json'].schema = { $ref: '#/components/schemas/Missing' };
    expect((await validateOpenApi(broken)).valid).toBe(false);
    const paths = document.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    const expected: [string, string][] = [
      ['get', '/account'],
      ['get', '/tokens'],
      ['post', '/tokens'],
      ['delete', '/tokens/{id}'],
      ['get', '/contacts'],
      ['post', '/contacts'],
      ['post', '/contacts/import'],
      ['get', '/contacts/{id}'],
      ['patch', '/contacts/{id}'],
      ['delete', '/contacts/{id}'],
      ['get', '/groups'],
      ['post', '/groups'],
      ['get', '/groups/{id}'],
      ['patch', '/groups/{id}'],
      ['delete', '/groups/{id}'],
      ['get', '/groups/{id}/contacts'],
      ['post', '/groups/{id}/contacts'],
      ['delete', '/groups/{id}/contacts/{contactId}'],
      ['get', '/devices'],
      ['post', '/devices'],
      ['get', '/devices/{id}'],
      ['get', '/devices/{id}/qr'],
      ['post', '/devices/{id}/reconnect'],
      ['delete', '/devices/{id}'],
      ['get', '/webhooks'],
      ['post', '/webhooks'],
      ['get', '/webhooks/{id}'],
      ['patch', '/webhooks/{id}'],
      ['delete', '/webhooks/{id}'],
      ['get', '/webhooks/{id}/secret'],
      ['post', '/webhooks/{id}/rotate-secret'],
      ['post', '/webhooks/{id}/test'],
      ['get', '/webhooks/{id}/deliveries'],
      ['post', '/webhooks/{id}/deliveries/{deliveryId}/retry'],
      ['post', '/webhooks/{id}/replay'],
      ['post', '/messages/send'],
      ['get', '/messages'],
      ['get', '/messages/{id}'],
      ['post', '/messages/{id}/cancel'],
      ['get', '/messages/{id}/media'],
      ['get', '/messages/bulk-jobs'],
      ['get', '/messages/bulk-jobs/{id}'],
      ['post', '/messages/bulk-jobs/{id}/cancel'],
      ['post', '/sandbox/scan'],
      ['post', '/sandbox/incoming'],
      ['post', '/sandbox/devices/{id}/disconnect'],
      ['get', '/sandbox/messages'],
      ['get', '/healthz'],
      ['get', '/readyz'],
      ['get', '/metrics'],
    ];
    for (const [method, path] of expected) {
      expect(paths[path]?.[method], `${method} ${path}`).toBeDefined();
      if (!['/healthz', '/readyz', '/metrics'].includes(path)) {
        expect(Object.keys(paths[path]![method]!.responses)).toEqual(expect.arrayContaining(['400', '401', '429', '500']));
      }
    }
    // The /v1 form of every path is documented once, as the second server, and answers the same.
    expect(Object.keys(paths).filter((path) => path.startsWith('/v1'))).toEqual([]);
    expect(document.servers.map((server: { url: string }) => server.url)).toEqual([ctx.config.publicUrl, `${ctx.config.publicUrl}/v1`]);
    const tenant = await createTenant(ctx);
    for (const [method, path] of expected.filter(([, path]) => path === '/contacts' || path === '/account')) {
      const [root, v1] = await Promise.all(['', '/v1'].map((prefix) => ctx.app.inject({ method: method.toUpperCase() as 'GET', url: `${prefix}${path}`, headers: tenant.headers })));
      expect(v1!.statusCode).toBe(root!.statusCode);
      expect(Object.keys(v1!.json())).toEqual(Object.keys(root!.json()));
    }
  });

  it('names every operation and its records, describes every answer and documents the events as webhooks', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const operations = Object.values(document.paths as Record<string, Record<string, Record<string, unknown>>>).flatMap((item) => Object.values(item));
    expect(operations.length).toBeGreaterThan(50);
    for (const operation of operations) {
      expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      expect((operation.tags as string[]).length).toBe(1);
      expect(operation.description).toEqual(expect.any(String));
      for (const response of Object.values(operation.responses as Record<string, { description?: string; $ref?: string }>)) {
        expect(response.$ref ?? response.description).not.toMatch(/Default Response/);
      }
    }
    const schemas = document.components.schemas as Record<string, unknown>;
    for (const name of ['Message', 'BulkJob', 'Contact', 'Group', 'Device', 'Webhook', 'WebhookDelivery', 'Event', 'Token', 'Error', 'DirectSendResult', 'BulkSendResult']) {
      expect(schemas[name], name).toBeDefined();
    }
    // The records are referenced, not copied: no inline object in a path carries a record's title.
    expect(JSON.stringify(document.paths)).not.toMatch(/"title"/);
    expect(Object.keys(document.webhooks).sort()).toEqual([...EVENT_TYPES].sort());
    expect(Object.keys(document.components.parameters)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  });
});
