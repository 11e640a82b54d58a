/**
 * Cancelling a running bulk job stops what the worker has claimed but not yet handed to the
 * network. The job's image is served by a local server that holds its answer, so the worker's
 * batch sits claimed (SENDING, fetching the media) when the job is cancelled; once the media
 * arrives, nothing of the job may reach the network. The cancel also writes bulk_job.cancelled.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type TestContext } from './helpers.js';
import {
  call,
  expectOk,
  getJob,
  linkDevice,
  listMessages,
  MESSAGING_ENV,
  phones,
  sandboxMessages,
  sendBulk,
  usedMessages,
  waitFor,
  type BulkJobBody,
  type DataBody,
} from './messaging-helpers.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

let ctx: TestContext;
let media: http.Server;
let release: () => void = () => undefined;
let requested = 0;

beforeAll(async () => {
  const held = new Promise<void>((resolve) => (release = resolve));
  media = http.createServer((request, response) => {
    requested++;
    void held.then(() => response.writeHead(200, { 'content-type': 'image/png', 'content-length': String(PNG.length) }).end(PNG));
  });
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  ctx = await createTestApp({ ...MESSAGING_ENV, ALLOW_PRIVATE_URLS: 'true', BULK_DELAY_MS: '0' }, { worker: true });
});
afterAll(async () => {
  release();
  media.closeAllConnections();
  await new Promise((resolve) => media.close(resolve));
  await ctx?.close();
});

describe('cancelling a running bulk job', () => {
  it('cancels the messages the worker claimed but had not handed over, refunds them, and writes bulk_job.cancelled', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const url = `http://127.0.0.1:${(media.address() as AddressInfo).port}/cat.png`;
    const created = await sendBulk(ctx, tenant, { type: 'IMAGE', mediaUrl: url, content: 'held', recipients: phones(20) });

    // The worker has claimed the job's messages and is waiting for their image.
    await waitFor(async () => (requested > 0 ? true : undefined), 10_000, 'the worker to fetch the media');
    const sending = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=SENDING&limit=100`);
    expect(sending.meta.total).toBeGreaterThan(0);

    const cancelled = expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`));
    expect(cancelled.data.status).toBe('CANCELLED');
    // The worker hears of the cancel (NOTIFY on commit) before the media arrives.
    await waitFor(async () => (ctx.worker!.supervisor!.jobCancelled(created.jobId) ? true : undefined), 10_000, 'the worker to hear of the cancel');
    release();

    const job = await waitFor(async () => {
      const current = await getJob(ctx, tenant, created.jobId);
      return current.cancelledCount === 20 ? current : undefined;
    }, 10_000, 'every message of the job cancelled');
    expect(job).toMatchObject({ status: 'CANCELLED', totalContacts: 20, sentCount: 0, failedCount: 0, cancelledCount: 20 });
    expect((await listMessages(ctx, tenant, `jobId=${created.jobId}&status=CANCELLED&limit=100`)).meta.total).toBe(20);
    expect((await sandboxMessages(ctx, tenant)).data).toHaveLength(0);
    expect(await usedMessages(ctx, tenant)).toBe(0);

    const events = expectOk<{ data: { type: string; data: { id: string; status: string } }[] }>(await call(ctx, tenant, 'GET', '/events?type=bulk_job.cancelled'));
    expect(events.data).toHaveLength(1);
    expect(events.data[0]!.data).toMatchObject({ id: created.jobId, status: 'CANCELLED' });
  });
});
