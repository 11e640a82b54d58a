/**
 * The typed client (client/) against the running server on a loopback port: a contact, a sandbox
 * device linked by its QR code, a direct send and a bulk job told apart by one check of `async`,
 * the job followed to COMPLETED, a file uploaded (as the body and as a form) and sent by its
 * mediaUrl, and a webhook delivery received on a loopback server and checked with the client's
 * verifier. Also: a 429 is retried after Retry-After with the same request and idempotency key,
 * and client/schema.d.ts is what openapi-typescript makes from the running server's
 * /openapi.json today, with the records as named types.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createWaygateClient,
  retryAfterMs,
  verifyWebhook,
  WebhookVerificationError,
  type BulkJob,
  type BulkSendResult,
  type Contact,
  type DirectSendResult,
  type Message,
  type WebhookEvent,
  type WaygateClient,
} from '../client/index.js';
import { CLIENT_TYPES_FILE, generateClientTypes } from '../scripts/client-generate.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { phone, waitFor } from './messaging-helpers.js';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** A loopback HTTP server that keeps what it is sent and answers with `answer`. */
async function receiver(answer: (request: Received, index: number) => Answer) {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const entry = { headers: request.headers, body };
      received.push(entry);
      const { status, headers, body: out } = answer(entry, received.length - 1);
      response.writeHead(status, headers).end(out ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { received, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let ctx: TestContext;
let tenant: Tenant;
let waygate: WaygateClient;
let baseUrl: string;

beforeAll(async () => {
  ctx = await createTestApp({ ALLOW_PRIVATE_URLS: 'true', SANDBOX_QR_MS: '1000', WEBHOOK_RETRY_SCHEDULE: '0,100ms,200ms' }, { worker: true });
  await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  tenant = await createTenant(ctx);
  waygate = createWaygateClient({ baseUrl, apiKey: tenant.token });
});
afterAll(async () => ctx?.close());

describe('the typed client against the running server', () => {
  it('creates a contact, links a sandbox device, sends direct and bulk, follows the job and verifies a webhook', async () => {
    const hooks = await receiver(() => ({ status: 204 }));
    try {
      const webhook = await waygate.POST('/webhooks', { body: { url: `${hooks.url}/waygate`, events: ['bulk_job.completed'] } });
      expect(webhook.response.status).toBe(201);
      const secret = webhook.data!.data.secret;

      const created = await waygate.POST('/contacts', { body: { name: 'Ana Putri', phoneNumber: `+${phone()}` } });
      expect(created.response.status, JSON.stringify(created.error)).toBe(201);
      const contact: Contact = created.data!.data;
      expect(contact.phoneNumber).toMatch(/^\d+$/);

      // Link a device: the sandbox plays the phone scanning its QR code (codes rotate: scan the current one).
      const device = await waygate.POST('/devices', { body: { name: 'Front desk' } });
      expect(device.response.status).toBe(201);
      const deviceId = device.data!.data.id;
      const number = phone();
      await waitFor(async () => {
        const qr = await waygate.GET('/devices/{id}/qr', { params: { path: { id: deviceId } } });
        const scanned = await waygate.POST('/sandbox/scan', { body: { code: qr.data!.data.code, phoneNumber: number } });
        return scanned.response.ok;
      }, 10_000, 'a scan of the current QR code');
      await waitFor(async () => (await waygate.GET('/devices/{id}', { params: { path: { id: deviceId } } })).data?.data.status === 'CONNECTED', 10_000, 'CONNECTED');

      // One check of `async` tells the two answers apart.
      const direct = await waygate.POST('/messages/send', { body: { type: 'TEXT', content: 'Your order is ready', recipients: [contact.phoneNumber] } });
      const bulk = await waygate.POST('/messages/send', { body: { type: 'text', content: 'We open at 10', recipients: Array.from({ length: 11 }, () => phone()) } });
      let message: Message | undefined;
      let jobId: string | undefined;
      for (const sent of [direct.data, bulk.data]) {
        if (!sent) throw new Error('a send failed');
        if (sent.async) {
          expectTypeOf(sent).toEqualTypeOf<BulkSendResult>();
          jobId = sent.jobId;
        } else {
          expectTypeOf(sent).toEqualTypeOf<DirectSendResult>();
          message = sent.message;
        }
      }
      expect(message).toMatchObject({ to: contact.phoneNumber, deviceId });
      expect(jobId).toMatch(/^job_/);

      const job = await waitFor(async () => {
        const { data } = await waygate.GET('/messages/bulk-jobs/{id}', { params: { path: { id: jobId! } } });
        return data?.data.status === 'COMPLETED' ? data.data : undefined;
      }, 20_000, 'the job COMPLETED');
      expect(job).toMatchObject<Partial<BulkJob>>({ totalContacts: 11, sentCount: 11, failedCount: 0 });

      // A file from the computer: uploaded as the body (binary: the schema types it as a string), sent by its mediaUrl.
      const photo = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(2_000, 1)]);
      const upload = await waygate.POST('/media', {
        params: { query: { fileName: 'menu.png' } },
        headers: { 'content-type': 'image/png' },
        body: photo as unknown as string,
        bodySerializer: (body) => body,
      });
      expect(upload.response.status, JSON.stringify(upload.error)).toBe(201);
      expect(upload.data!.data).toMatchObject({ contentType: 'image/png', fileName: 'menu.png', sizeBytes: photo.length });
      // Or as a form: openapi-fetch passes FormData as it is, and fetch writes the boundary.
      const form = new FormData();
      form.append('file', new Blob([photo], { type: 'image/png' }), 'menu-form.png');
      const formUpload = await waygate.POST('/media', { body: form as unknown as string });
      expect(formUpload.response.status, JSON.stringify(formUpload.error)).toBe(201);
      expect(formUpload.data!.data).toMatchObject({ contentType: 'image/png', fileName: 'menu-form.png', sizeBytes: photo.length, sha256: upload.data!.data.sha256 });
      const image = await waygate.POST('/messages/send', { body: { type: 'IMAGE', content: 'Our menu', mediaUrl: upload.data!.data.mediaUrl, recipients: [contact.phoneNumber] } });
      expect(image.data).toMatchObject({ async: false, message: { type: 'IMAGE', status: 'SENT' } });

      const delivery = await waitFor(() => hooks.received.find((entry) => entry.body.includes('bulk_job.completed')), 20_000, 'the bulk_job.completed delivery');
      const event: WebhookEvent = verifyWebhook({ secret, headers: delivery.headers, body: delivery.body });
      expect(event.type).toBe('bulk_job.completed');
      if (event.type !== 'bulk_job.completed') throw new Error('narrowed above');
      expect(event.data).toMatchObject({ id: jobId, status: 'COMPLETED', totalContacts: 11 });
      expect(event.seq).toBeGreaterThan(0);

      // What was not signed with this secret, or was changed, or is old, is refused.
      expect(() => verifyWebhook({ secret, headers: delivery.headers, body: delivery.body.replace('COMPLETED', 'CANCELLED') })).toThrow(WebhookVerificationError);
      expect(() => verifyWebhook({ secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`, headers: delivery.headers, body: delivery.body })).toThrow(/No webhook-signature/);
      expect(() => verifyWebhook({ secret, headers: delivery.headers, body: delivery.body, now: new Date(Date.now() + 3_600_000) })).toThrow(/too far/);
      expect(() => verifyWebhook({ secret, headers: { ...delivery.headers, 'webhook-id': undefined }, body: delivery.body })).toThrow(/Missing/);
    } finally {
      await hooks.close();
    }
  });

  it('answers errors in the typed error body, and a wrong token is 401', async () => {
    const missing = await waygate.GET('/contacts/{id}', { params: { path: { id: 'ct_missing' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('NOT_FOUND');
    const stranger = createWaygateClient({ baseUrl: `${baseUrl}/v1`, apiKey: 'wg_not_a_token' });
    const refused = await stranger.GET('/account');
    expect(refused.response.status).toBe(401);
    expect(refused.error?.error.code).toBe('UNAUTHORIZED');
  });
});

describe('retries and idempotency keys', () => {
  it('retries a 429 after Retry-After with the same request and the same Idempotency-Key', async () => {
    const server = await receiver((_request, index): Answer =>
      index === 0
        ? { status: 429, headers: { 'retry-after': '1', 'content-type': 'application/json' }, body: '{"success":false,"error":{"code":"RATE_LIMITED","message":"slow down"},"requestId":"r"}' }
        : { status: 202, headers: { 'content-type': 'application/json' }, body: '{"success":true,"jobId":"job_1","status":"PROCESSING","message":"Bulk job job_1 created for 11 recipients","totalContacts":11,"async":true}' },
    );
    try {
      const client = createWaygateClient({ baseUrl: server.url, apiKey: 'wg_test' });
      const started = Date.now();
      const sent = await client.POST('/messages/send', { body: { type: 'TEXT', content: 'hi', groupIds: ['grp_1'] } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(sent.data?.async).toBe(true);
      expect(server.received).toHaveLength(2);
      const [first, second] = server.received;
      expect(first!.headers['x-api-key']).toBe('wg_test');
      expect(first!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
      expect(second!.headers['idempotency-key']).toBe(first!.headers['idempotency-key']);
      expect(second!.body).toBe(first!.body);

      // A key of the caller's own is kept; each new send gets a new one.
      await client.POST('/messages/send', { body: { type: 'TEXT', content: 'hi', groupIds: ['grp_1'] }, params: { header: { 'idempotency-key': 'order-1042' } } });
      await client.POST('/messages/send', { body: { type: 'TEXT', content: 'hi', groupIds: ['grp_1'] } });
      expect(server.received[2]!.headers['idempotency-key']).toBe('order-1042');
      expect(server.received[3]!.headers['idempotency-key']).not.toBe(first!.headers['idempotency-key']);
    } finally {
      await server.close();
    }
  });

  it('gives up after maxRetries and returns the 429', async () => {
    const server = await receiver(() => ({ status: 429, headers: { 'retry-after': '0', 'content-type': 'application/json' }, body: '{"success":false,"error":{"code":"RATE_LIMITED","message":"no"},"requestId":"r"}' }));
    try {
      const client = createWaygateClient({ baseUrl: server.url, apiKey: 'wg_test', maxRetries: 2 });
      const answer = await client.GET('/account');
      expect(answer.response.status).toBe(429);
      expect(answer.error?.error.code).toBe('RATE_LIMITED');
      expect(server.received).toHaveLength(3);
    } finally {
      await server.close();
    }
  });

  it('reads Retry-After as seconds or as an HTTP date, and backs off without one', () => {
    expect(retryAfterMs('3', 0)).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 0, 4_000)).toBe(6_000);
    expect(retryAfterMs(null, 0)).toBe(1000);
    expect(retryAfterMs('soon', 2)).toBe(4000);
  });
});

describe('the generated types', () => {
  it('are what openapi-typescript makes from /openapi.json today, with the records as named types', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const committed = fs.readFileSync(CLIENT_TYPES_FILE, 'utf8');
    expect(await generateClientTypes(document), 'client/schema.d.ts is stale: run npm run client:generate').toBe(committed);
    for (const name of ['Message', 'BulkJob', 'Contact', 'Group', 'GroupMember', 'Device', 'Webhook', 'WebhookDelivery', 'Event', 'Token', 'Account', 'Error', 'DirectSendResult', 'BulkSendResult', 'SendMessageRequest', 'MessageStatusEvent']) {
      expect(committed, name).toContain(`export type ${name} = components['schemas']['${name}'];`);
    }
    expectTypeOf<Message['status']>().toEqualTypeOf<'SCHEDULED' | 'QUEUED' | 'SENDING' | 'SENT' | 'DELIVERED' | 'READ' | 'FAILED' | 'CANCELLED' | 'RECEIVED'>();
    expectTypeOf<DirectSendResult['async']>().toEqualTypeOf<false>();
    expectTypeOf<BulkSendResult['async']>().toEqualTypeOf<true>();
    expectTypeOf<WebhookEvent['type']>().toEqualTypeOf<
      'message.received' | 'message.status' | 'message.reaction' | 'message.edited' | 'message.deleted' | 'poll.vote' | 'chat.presence' | 'device.status' | 'bulk_job.completed' | 'bulk_job.cancelled' | 'webhook.test'
    >();
  });
});
