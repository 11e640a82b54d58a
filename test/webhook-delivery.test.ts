/**
 * Webhook delivery end to end: real HTTP receivers on 127.0.0.1, every signature checked with
 * the `standardwebhooks` package (someone else's implementation of the spec). Retry schedules
 * are compressed (0, 100 ms, 200 ms), so retries, Retry-After, 410 and timeouts take a second.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret } from '../src/outbound/standard-webhooks.js';
import { GuardedHttp } from '../src/outbound/ssrf.js';
import { WebhookDelivery, type WebhookDeliveryOptions } from '../src/events/webhook-delivery.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { call, expectOk, linkDevice, phone, phones, sendBulk, sendDirect, sleep, waitFor, type DataBody, type PageBody } from './messaging-helpers.js';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { type: string; timestamp: string; seq: number; data: Record<string, unknown> };
}

/** A receiver on 127.0.0.1 that answers with `respond` (default 204) and keeps what it got. */
async function receiver(respond: (request: http.IncomingMessage, count: number) => { status: number; headers?: Record<string, string> } = () => ({ status: 204 })) {
  const received: Received[] = [];
  /** Every request, answered 2xx or not: when it came, its webhook-id and what it was answered. */
  const log: { at: number; id: string; status: number }[] = [];
  let count = 0;
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      count += 1;
      const answer = respond(request, count);
      log.push({ at: Date.now(), id: String(request.headers['webhook-id']), status: answer.status });
      if (answer.status >= 200 && answer.status < 300) received.push({ headers: request.headers, body, json: JSON.parse(body) as Received['json'] });
      response.writeHead(answer.status, answer.headers ?? {});
      response.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    received,
    log,
    attempts: () => count,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Every received body verifies with `secret` (standardwebhooks), and carries a webhook-id. */
function expectVerified(items: readonly Received[], secret: string): void {
  const verifier = new Webhook(secret);
  for (const item of items) {
    expect(() => verifier.verify(item.body, item.headers as Record<string, string>)).not.toThrow();
    expect(item.headers['webhook-id']).toMatch(/^evt_/);
  }
}

interface WebhookBody {
  id: string;
  url: string;
  events: string[];
  active: boolean;
  disabledReason: string | null;
  secret: string;
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
  eventSeq: number;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  lastAttempts: AttemptBody[];
}

/** POST /webhooks (the public API); returns the endpoint with its secret. */
async function createEndpoint(ctx: TestContext, tenant: Tenant, url: string, events?: string[]): Promise<WebhookBody> {
  return expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'POST', '/webhooks', { url, ...(events ? { events } : {}) }), 201).data;
}

async function deliveries(ctx: TestContext, tenant: Tenant, endpointId: string): Promise<DeliveryBody[]> {
  return expectOk<PageBody<DeliveryBody>>(await call(ctx, tenant, 'GET', `/webhooks/${endpointId}/deliveries?limit=100`)).data;
}

/** POST /webhooks/:id/test: one webhook.test event for that endpoint only. */
async function sendTestEvent(ctx: TestContext, tenant: Tenant, endpointId: string): Promise<{ eventId: string; eventSeq: number; deliveryId: string }> {
  return expectOk<DataBody<{ eventId: string; eventSeq: number; deliveryId: string }>>(await call(ctx, tenant, 'POST', `/webhooks/${endpointId}/test`), 202).data;
}

async function addEndpoint(ctx: TestContext, tenant: Tenant, url: string, events: string[] = []): Promise<{ id: string; secret: string }> {
  const id = `wh_${Math.random().toString(36).slice(2, 14)}`;
  const secret = newWebhookSecret();
  await ctx.database.query('INSERT INTO webhook_endpoints (id, account_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [id, tenant.accountId, url, events, secret]);
  return { id, secret };
}

/**
 * An app of its own without a worker, a receiver on 127.0.0.1 built on it (`listener`), and the
 * one worker built here (not started: the test starts it), all closed after `body`.
 */
async function withOwnWorker(
  options: Omit<WebhookDeliveryOptions, 'retryScheduleMs'>,
  listener: (own: TestContext) => http.RequestListener,
  body: (own: TestContext, url: string, worker: WebhookDelivery) => Promise<void>,
): Promise<void> {
  const own = await createTestApp({ ALLOW_PRIVATE_URLS: 'true', WEBHOOK_RETRY_SCHEDULE: '0,100ms,200ms' });
  const server = http.createServer(listener(own));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const guarded = new GuardedHttp(true);
  const worker = new WebhookDelivery(own.database, own.services.bus, guarded, pino({ level: 'silent' }), { retryScheduleMs: [0, 100, 200], ...options });
  try {
    await body(own, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, worker);
  } finally {
    await worker.stop();
    await guarded.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await own.close();
  }
}

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp({ ALLOW_PRIVATE_URLS: 'true', WEBHOOK_RETRY_SCHEDULE: '0,100ms,200ms' }, { worker: true });
});
afterAll(async () => ctx.close());

describe('webhook delivery', () => {
  it('delivers signed message.status and device.status events in seq order', async () => {
    const hook = await receiver();
    try {
      const tenant = await createTenant(ctx);
      const { secret } = await addEndpoint(ctx, tenant, hook.url);
      await linkDevice(ctx, tenant);
      await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hello', recipients: [phone()] });
      // Deliveries run concurrently and may arrive in any order: wait for all four events.
      await waitFor(
        () => hook.received.filter((r) => r.json.type === 'message.status').length >= 3 && hook.received.some((r) => r.json.type === 'device.status'),
        10_000,
        'SENT, DELIVERED, READ and device.status events',
      );
      const verifier = new Webhook(secret);
      for (const item of hook.received) {
        expect(() => verifier.verify(item.body, item.headers as Record<string, string>)).not.toThrow();
        expect(item.headers['webhook-id']).toMatch(/^evt_/);
      }
      const statuses = hook.received.filter((r) => r.json.type === 'message.status').map((r) => r.json.data.status);
      expect(statuses).toEqual(expect.arrayContaining(['SENT', 'DELIVERED', 'READ']));
      // A direct send has no job.
      for (const item of hook.received.filter((r) => r.json.type === 'message.status')) expect(item.json.data.jobId).toBeNull();
      expect(hook.received.some((r) => r.json.type === 'device.status' && r.json.data.status === 'CONNECTED')).toBe(true);
      const seqs = hook.received.map((r) => r.json.seq).sort((a, b) => a - b);
      expect(seqs[0]).toBe(1);
    } finally {
      await hook.close();
    }
  });

  it('delivers message.received for an incoming message (POST /sandbox/incoming)', async () => {
    const hook = await receiver();
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url, ['message.received']);
      const device = await linkDevice(ctx, tenant);
      const from = phone();
      expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, content: 'hi there' }), 202);
      const [got] = await waitFor(() => (hook.received.length >= 1 ? hook.received : undefined), 10_000, 'the message.received event');
      expectVerified(hook.received, endpoint.secret);
      expect(got!.json.type).toBe('message.received');
      expect(got!.json.data).toMatchObject({ direction: 'in', from, deviceId: device.id, content: 'hi there', status: 'RECEIVED', type: 'TEXT' });
      expect(got!.json.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(typeof got!.json.seq).toBe('number');
      // The endpoint subscribed to message.received only: the device's CONNECTED event is not sent.
      await sleep(200);
      expect(hook.received.map((r) => r.json.type)).toEqual(['message.received']);
    } finally {
      await hook.close();
    }
  });

  it('delivers message.status SENT, DELIVERED, READ and FAILED with the jobId of a bulk job, then bulk_job.completed', async () => {
    const hook = await receiver();
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      await linkDevice(ctx, tenant);
      const good = phones(11);
      const unreachable = phone('0000');
      const { jobId } = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'bulk hello', recipients: [...good, unreachable] });
      // Deliveries run concurrently, so events arrive in any order: wait for all of them.
      await waitFor(
        () => {
          const statuses = hook.received.filter((r) => r.json.type === 'message.status');
          const count = (status: string): number => new Set(statuses.filter((r) => r.json.data.status === status).map((r) => r.json.data.to)).size;
          return (
            count('SENT') === good.length &&
            count('DELIVERED') === good.length &&
            count('READ') === good.length &&
            count('FAILED') === 1 &&
            hook.received.some((r) => r.json.type === 'bulk_job.completed')
          );
        },
        20_000,
        'SENT, DELIVERED and READ for every good recipient, FAILED for the other, and bulk_job.completed',
      );
      expectVerified(hook.received, endpoint.secret);
      const statusEvents = hook.received.filter((r) => r.json.type === 'message.status');
      for (const event of statusEvents) expect(event.json.data.jobId).toBe(jobId);
      for (const status of ['SENT', 'DELIVERED', 'READ']) {
        expect(statusEvents.filter((r) => r.json.data.status === status).map((r) => r.json.data.to).sort(), status).toEqual([...good].sort());
      }
      const failed = statusEvents.filter((r) => r.json.data.status === 'FAILED');
      expect(failed).toHaveLength(1);
      expect(failed[0]!.json.data).toMatchObject({ to: unreachable, jobId, status: 'FAILED' });
      expect((failed[0]!.json.data.error as { code: string } | null)?.code).toEqual(expect.any(String));
      const completed = hook.received.filter((r) => r.json.type === 'bulk_job.completed');
      expect(completed).toHaveLength(1);
      expect(completed[0]!.json.data).toMatchObject({ id: jobId, status: 'COMPLETED', totalContacts: 12, sentCount: 11, failedCount: 1 });
      // One delivery per event: webhook-ids are unique, and the seqs are distinct.
      const ids = hook.received.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(hook.received.map((r) => r.json.seq)).size).toBe(hook.received.length);
    } finally {
      await hook.close();
    }
  });

  it('delivers only the subscribed types: an endpoint with events [device.status] gets only those', async () => {
    const all = await receiver();
    const onlyDevice = await receiver();
    try {
      const tenant = await createTenant(ctx);
      await createEndpoint(ctx, tenant, all.url);
      const filtered = await createEndpoint(ctx, tenant, onlyDevice.url, ['device.status']);
      expect(filtered.events).toEqual(['device.status']);
      const device = await linkDevice(ctx, tenant);
      await sendDirect(ctx, tenant, { type: 'TEXT', content: 'filtered', recipients: [phone()] });
      expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: phone(), content: 'in' }), 202);
      await waitFor(
        () => ['message.received', 'device.status'].every((type) => all.received.some((r) => r.json.type === type)) && all.received.filter((r) => r.json.data.status === 'READ').length === 1,
        10_000,
        'every event at the unfiltered endpoint',
      );
      await waitFor(() => onlyDevice.received.length >= 1, 5_000, 'the device.status event');
      await sleep(300);
      expectVerified(onlyDevice.received, filtered.secret);
      expect(onlyDevice.received.map((r) => r.json.type)).toEqual(['device.status']);
      expect(onlyDevice.received[0]!.json.data).toMatchObject({ id: device.id, status: 'CONNECTED' });
      // The same event at both endpoints: the same webhook-id (it is the event's id).
      const twin = all.received.find((r) => r.json.type === 'device.status')!;
      expect(onlyDevice.received[0]!.headers['webhook-id']).toBe(twin.headers['webhook-id']);
    } finally {
      await all.close();
      await onlyDevice.close();
    }
  });

  it('retries with the same webhook-id: 500, 500, then 200 is three attempts, all in the delivery log', async () => {
    const hook = await receiver((_request, count) => ({ status: count <= 2 ? 500 : 200 }));
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      const test = await sendTestEvent(ctx, tenant, endpoint.id);
      await waitFor(() => hook.received.length >= 1, 10_000, 'the third attempt');
      expect(hook.log.map((entry) => entry.status)).toEqual([500, 500, 200]);
      expect(new Set(hook.log.map((entry) => entry.id))).toEqual(new Set([test.eventId]));
      expectVerified(hook.received, endpoint.secret);
      expect(hook.received[0]!.json).toMatchObject({ type: 'webhook.test', seq: test.eventSeq, data: { endpointId: endpoint.id } });
      const delivery = await waitFor(async () => {
        const [found] = await deliveries(ctx, tenant, endpoint.id);
        return found?.status === 'SUCCEEDED' ? found : undefined;
      }, 5_000, 'the delivery to be recorded SUCCEEDED');
      expect(delivery).toMatchObject({ id: test.deliveryId, eventId: test.eventId, eventType: 'webhook.test', attempts: 3, lastStatusCode: 200, lastError: null });
      expect(delivery.deliveredAt).not.toBeNull();
      expect(delivery.lastAttempts.map((a) => a.statusCode)).toEqual([200, 500, 500]);
      for (const attempt of delivery.lastAttempts) {
        expect(attempt.latencyMs).toBeGreaterThanOrEqual(0);
        expect(attempt.responseExcerpt).toBe('ok');
      }
      expect(delivery.lastAttempts[1]!.error).toBe('HTTP 500');
      await sleep(300);
      expect(hook.attempts()).toBe(3);
    } finally {
      await hook.close();
    }
  });

  it('keeps each endpoint health: failures since the last success, the last success and failure; FAILING until a success, DISABLED after a 410', async () => {
    let answer = 500;
    const hook = await receiver(() => ({ status: answer }));
    const gone = await receiver(() => ({ status: 410 }));
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      const health = async (id: string) => expectOk<DataBody<{ active: boolean; health: { state: string; consecutiveFailures: number; lastSuccessAt: string | null; lastFailureAt: string | null } }>>(
        await call(ctx, tenant, 'GET', `/webhooks/${id}`),
      ).data;
      expect((await health(endpoint.id)).health).toEqual({ state: 'NO_ATTEMPTS', consecutiveFailures: 0, lastSuccessAt: null, lastFailureAt: null });
      // Every attempt fails: three attempts of the schedule, all counted.
      await sendTestEvent(ctx, tenant, endpoint.id);
      const failing = await waitFor(async () => {
        const found = await health(endpoint.id);
        return found.health.consecutiveFailures === 3 ? found : undefined;
      }, 10_000, 'three failed attempts counted');
      expect(failing.health.state).toBe('FAILING');
      expect(failing.health.lastSuccessAt).toBeNull();
      expect(failing.health.lastFailureAt).not.toBeNull();
      // One success resets the count.
      answer = 204;
      await sendTestEvent(ctx, tenant, endpoint.id);
      const healthy = await waitFor(async () => {
        const found = await health(endpoint.id);
        return found.health.state === 'HEALTHY' ? found : undefined;
      }, 10_000, 'a successful attempt');
      expect(healthy.health.consecutiveFailures).toBe(0);
      expect(Date.parse(healthy.health.lastSuccessAt!)).toBeGreaterThanOrEqual(Date.parse(failing.health.lastFailureAt!));
      // The listing shows the same.
      const listed = expectOk<PageBody<{ id: string; health: { state: string } }>>(await call(ctx, tenant, 'GET', '/webhooks')).data.find((item) => item.id === endpoint.id);
      expect(listed?.health.state).toBe('HEALTHY');
      // A 410 turns the endpoint off: DISABLED, with its failure counted.
      const goneEndpoint = await createEndpoint(ctx, tenant, gone.url);
      await sendTestEvent(ctx, tenant, goneEndpoint.id);
      const disabled = await waitFor(async () => {
        const found = await health(goneEndpoint.id);
        return found.active ? undefined : found;
      }, 10_000, 'the endpoint turned off');
      expect(disabled.health).toMatchObject({ state: 'DISABLED', consecutiveFailures: 1 });
    } finally {
      await hook.close();
      await gone.close();
    }
  });

  it('does not follow a redirect (to the cloud metadata address here): a 302 is a failed attempt, retried, never followed', async () => {
    const target = await receiver();
    const hook = await receiver((_request, count) =>
      count === 1 ? { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } } : { status: 307, headers: { location: target.url } },
    );
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      const test = await sendTestEvent(ctx, tenant, endpoint.id);
      const delivery = await waitFor(async () => {
        const [found] = await deliveries(ctx, tenant, endpoint.id);
        return found?.status === 'FAILED' ? found : undefined;
      }, 10_000, 'the delivery to give up after the schedule');
      expect(delivery).toMatchObject({ id: test.deliveryId, attempts: 3, lastStatusCode: 307 });
      expect(delivery.lastAttempts.map((a) => a.statusCode)).toEqual([307, 307, 302]);
      // The redirect targets were never contacted.
      expect(target.attempts()).toBe(0);
      expect(hook.attempts()).toBe(3);
    } finally {
      await hook.close();
      await target.close();
    }
  });

  it('honours Retry-After: a 429 with Retry-After: 1 delays the next attempt by a second, not the 100 ms of the schedule', async () => {
    const hook = await receiver((_request, count) => (count === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 204 }));
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      await sendTestEvent(ctx, tenant, endpoint.id);
      await waitFor(() => hook.received.length >= 1, 10_000, 'the attempt after Retry-After');
      expect(hook.log.map((entry) => entry.status)).toEqual([429, 204]);
      expect(hook.log[1]!.id).toBe(hook.log[0]!.id);
      expect(hook.log[1]!.at - hook.log[0]!.at).toBeGreaterThanOrEqual(950);
      expectVerified(hook.received, endpoint.secret);
    } finally {
      await hook.close();
    }
  });

  it('410 Gone fails the delivery and turns the endpoint off with a reason; nothing more is sent to it', async () => {
    const hook = await receiver(() => ({ status: 410 }));
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      await sendTestEvent(ctx, tenant, endpoint.id);
      const delivery = await waitFor(async () => {
        const [found] = await deliveries(ctx, tenant, endpoint.id);
        return found?.status === 'FAILED' ? found : undefined;
      }, 10_000, 'the delivery to fail');
      expect(delivery).toMatchObject({ attempts: 1, lastStatusCode: 410 });
      expect(delivery.lastError).toMatch(/410/);
      const after = expectOk<DataBody<WebhookBody>>(await call(ctx, tenant, 'GET', `/webhooks/${endpoint.id}`)).data;
      expect(after.active).toBe(false);
      expect(after.disabledReason).toMatch(/410/);
      // Events after that are not queued for it, and the test event is refused.
      await linkDevice(ctx, tenant);
      await sleep(300);
      expect(hook.attempts()).toBe(1);
      expect((await deliveries(ctx, tenant, endpoint.id)).length).toBe(1);
      expect((await call(ctx, tenant, 'POST', `/webhooks/${endpoint.id}/test`)).statusCode).toBe(409);
    } finally {
      await hook.close();
    }
  });

  it('gives up after a timeout on every step of the schedule (worker with timeoutMs 300), recording each attempt', async () => {
    // A receiver that reads the request and never answers.
    await withOwnWorker({ workerId: 'timeout-test', timeoutMs: 300 }, () => () => undefined, async (own, url, worker) => {
      const tenant = await createTenant(own);
      const endpoint = await createEndpoint(own, tenant, url);
      const started = Date.now();
      worker.start();
      await sendTestEvent(own, tenant, endpoint.id);
      const delivery = await waitFor(async () => {
        const [found] = await deliveries(own, tenant, endpoint.id);
        return found?.status === 'FAILED' ? found : undefined;
      }, 10_000, 'the delivery to fail after three timeouts');
      expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 300 + 300);
      expect(delivery.attempts).toBe(3);
      expect(delivery.lastStatusCode).toBeNull();
      expect(delivery.lastError).toMatch(/No answer within 0.3 s/);
      expect(delivery.lastAttempts).toHaveLength(3);
      for (const attempt of delivery.lastAttempts) {
        expect(attempt.statusCode).toBeNull();
        expect(attempt.error).toMatch(/No answer within 0.3 s/);
        expect(attempt.latencyMs).toBeGreaterThanOrEqual(290);
        expect(attempt.latencyMs).toBeLessThan(3_000);
      }
      // The endpoint stays on: timeouts are failures, not a 410.
      expect(expectOk<DataBody<WebhookBody>>(await call(own, tenant, 'GET', `/webhooks/${endpoint.id}`)).data.active).toBe(true);
    });
  });

  it('claims ahead for an endpoint that answers (perEndpoint 2, prefetch 2: 4 held) but never has more than 2 of its requests in flight', async () => {
    // A receiver that holds each request 100 ms and, as each arrives, counts what the worker holds.
    let open = 0;
    let mostOpen = 0;
    const heldAtArrival: number[] = [];
    const ids: string[] = [];
    const slow = (own: TestContext): http.RequestListener => (request, response) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      ids.push(String(request.headers['webhook-id']));
      request.resume();
      void own.database
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE claimed_by = 'prefetch-test' AND status = 'PENDING'`)
        .then(([row]) => heldAtArrival.push(row!.n))
        .finally(() =>
          setTimeout(() => {
            open -= 1;
            response.writeHead(204).end();
          }, 100),
        );
    };
    await withOwnWorker({ workerId: 'prefetch-test', perEndpoint: 2, prefetch: 2 }, slow, async (own, url, worker) => {
      const tenant = await createTenant(own);
      const endpoint = await createEndpoint(own, tenant, url);
      for (let i = 0; i < 12; i++) await sendTestEvent(own, tenant, endpoint.id);
      worker.start();
      await waitFor(async () => (await deliveries(own, tenant, endpoint.id)).filter((d) => d.status === 'SUCCEEDED').length === 12, 15_000, 'twelve deliveries');
      expect(mostOpen).toBe(2);
      // The first claim took two for the slots and two ahead; each delivery was sent once.
      expect(heldAtArrival[0]).toBe(4);
      expect(new Set(ids).size).toBe(12);
      expect(ids).toHaveLength(12);
    });
  });

  it('a delivery claimed ahead that waited past the spare time of its lease is released unsent and sent later: each attempt starts with its lease covering it, counted once', async () => {
    // Every request hangs: each attempt times out after 300 ms (lease 1 s: a delivery may wait 350 ms for a slot).
    // As each arrives, what is left of its delivery's lease is read: it must cover the attempt.
    let open = 0;
    let mostOpen = 0;
    const leaseLeftMs: number[] = [];
    const hanging = (own: TestContext): http.RequestListener => (request) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      request.on('close', () => (open -= 1));
      void own.database
        .query<{ ms: number }>(`SELECT (extract(epoch FROM claimed_until - clock_timestamp()) * 1000)::int AS ms FROM webhook_deliveries WHERE event_id = $1`, [
          String(request.headers['webhook-id']),
        ])
        .then(([row]) => leaseLeftMs.push(row?.ms ?? -1));
    };
    await withOwnWorker({ workerId: 'stale-test', timeoutMs: 300, perEndpoint: 1, prefetch: 3 }, hanging, async (own, url, worker) => {
      const tenant = await createTenant(own);
      const endpoint = await createEndpoint(own, tenant, url);
      // Four claimed at once, one slot: the third and fourth wait at least 600 and 900 ms.
      for (let i = 0; i < 4; i++) await sendTestEvent(own, tenant, endpoint.id);
      worker.start();
      const failed = await waitFor(async () => {
        const all = await deliveries(own, tenant, endpoint.id);
        return all.length === 4 && all.every((d) => d.status === 'FAILED') ? all : undefined;
      }, 20_000, 'four deliveries to fail after three timeouts each');
      for (const delivery of failed) {
        expect(delivery.attempts).toBe(3);
        expect(delivery.lastAttempts).toHaveLength(3);
      }
      expect(mostOpen).toBe(1);
      // Sent after waiting 600 and 900 ms of a 1 s lease, the third and fourth would have had less than an attempt's 300 ms left.
      await waitFor(() => leaseLeftMs.length === 12, 5_000, 'every arrival looked at');
      expect(Math.min(...leaseLeftMs)).toBeGreaterThanOrEqual(300);
    });
  });

  it('signs with both secrets after rotate-secret: two signatures, and each secret alone verifies', async () => {
    const hook = await receiver();
    try {
      const tenant = await createTenant(ctx);
      const endpoint = await createEndpoint(ctx, tenant, hook.url);
      const rotated = expectOk<DataBody<{ secret: string; previousSecret: string | null; previousSecretExpiresAt: string | null }>>(
        await call(ctx, tenant, 'POST', `/webhooks/${endpoint.id}/rotate-secret`),
      ).data;
      expect(rotated.previousSecret).toBe(endpoint.secret);
      expect(rotated.secret).not.toBe(endpoint.secret);
      expect(rotated.secret).toMatch(/^whsec_/);
      const read = expectOk<DataBody<{ secret: string; previousSecret: string | null }>>(await call(ctx, tenant, 'GET', `/webhooks/${endpoint.id}/secret`)).data;
      expect(read).toMatchObject({ secret: rotated.secret, previousSecret: endpoint.secret });
      await sendTestEvent(ctx, tenant, endpoint.id);
      const [got] = await waitFor(() => (hook.received.length >= 1 ? hook.received : undefined), 10_000, 'the test event');
      const signatures = String(got!.headers['webhook-signature']).split(' ');
      expect(signatures).toHaveLength(2);
      for (const signature of signatures) expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      // Each secret alone verifies (a receiver holding either one accepts the message) …
      expectVerified(hook.received, rotated.secret);
      expectVerified(hook.received, endpoint.secret);
      // … and each signature alone is one of the two secrets'.
      for (const [index, secret] of [rotated.secret, endpoint.secret].entries()) {
        const single = { ...(got!.headers as Record<string, string>), 'webhook-signature': signatures[index]! };
        expect(() => new Webhook(secret).verify(got!.body, single)).not.toThrow();
      }
      // A third secret does not.
      expect(() => new Webhook(newWebhookSecret()).verify(got!.body, got!.headers as Record<string, string>)).toThrow();
    } finally {
      await hook.close();
    }
  });
});
