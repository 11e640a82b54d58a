/**
 * Bulk jobs through the real app and a real worker: listing (paginated, newest first, status
 * filter), reading one with exact counters while it runs and once it is done, a 300-recipient job
 * with magic numbers, what the network received, cancelling (scheduled, running, finished),
 * cancelling single messages of a job, a job whose device is unlinked, and tenancy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestContext } from './helpers.js';
import {
  createMessagingApp,
  call,
  expectError,
  expectFieldError,
  expectOk,
  getJob,
  ISO_MS,
  isoIn,
  linkDevice,
  listMessages,
  phone,
  phones,
  sandboxMessages,
  sendBulk,
  sleep,
  time,
  usedMessages,
  waitFor,
  waitForDevice,
  waitForJob,
  type BulkJobBody,
  type DataBody,
  type MessageBody,
  type PageBody,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

const bulkText = (recipients: string[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({ type: 'TEXT', content: 'bulk hello', recipients, ...extra });

/** The counters of a job never contradict each other, at any moment. */
function expectConsistent(job: BulkJobBody): void {
  expect(job.sentCount + job.failedCount + job.cancelledCount, JSON.stringify(job)).toBeLessThanOrEqual(job.totalContacts);
  expect(job.deliveredCount, JSON.stringify(job)).toBeLessThanOrEqual(job.sentCount);
  expect(job.readCount, JSON.stringify(job)).toBeLessThanOrEqual(job.deliveredCount);
  for (const value of [job.sentCount, job.failedCount, job.deliveredCount, job.readCount, job.cancelledCount]) expect(value).toBeGreaterThanOrEqual(0);
}

/** Waits for the job's fan-out: `count` messages exist for it. */
async function waitForFanOut(tenantHeaders: Parameters<typeof listMessages>[1], jobId: string, count: number): Promise<PageBody<MessageBody>> {
  return waitFor(async () => {
    const page = await listMessages(ctx, tenantHeaders, `jobId=${jobId}&limit=100`);
    return page.meta.total === count ? page : undefined;
  }, 5_000, `the fan-out of job ${jobId} into ${count} messages`);
}

describe('listing and reading', () => {
  it('GET /messages/bulk-jobs is {success, data, meta}, newest first, with a status filter and page/limit', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const empty = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs'));
    expect(empty).toEqual({ success: true, data: [], meta: { total: 0, totalExact: true, page: 1, limit: 50, nextCursor: null } });

    const first = await sendBulk(ctx, tenant, bulkText(phones(11)));
    const second = await sendBulk(ctx, tenant, bulkText(phones(12)));
    const later = await sendBulk(ctx, tenant, bulkText(phones(13), { scheduledAt: isoIn(3_600_000) }));
    expect(later.status).toBe('SCHEDULED');
    await waitForJob(ctx, tenant, first.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');
    await waitForJob(ctx, tenant, second.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');

    const list = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs'));
    expect(list.success).toBe(true);
    expect(list.meta).toEqual({ total: 3, totalExact: true, page: 1, limit: 50, nextCursor: null });
    expect(list.data.map((job) => job.id)).toEqual([later.jobId, second.jobId, first.jobId]);
    expect(list.data.map((job) => job.totalContacts)).toEqual([13, 12, 11]);

    const page2 = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?page=2&limit=1'));
    expect(page2.meta).toEqual({ total: 3, totalExact: true, page: 2, limit: 1, nextCursor: expect.any(String) });
    expect(page2.data.map((job) => job.id)).toEqual([second.jobId]);
    expect(expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?limit=1000')).meta.limit).toBe(100);

    const completed = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?status=COMPLETED'));
    expect(completed.meta.total).toBe(2);
    expect(completed.data.map((job) => job.id)).toEqual([second.jobId, first.jobId]);
    const scheduled = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?status=SCHEDULED'));
    expect(scheduled.data.map((job) => job.id)).toEqual([later.jobId]);
    const processing = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?status=PROCESSING'));
    expect(processing.meta.total).toBe(0);

    expectFieldError(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?status=DONE'), 'status');
    expectFieldError(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?page=0'), 'page');
    expectOk(await call(ctx, tenant, 'GET', '/v1/messages/bulk-jobs'));
  });

  it('GET /messages/bulk-jobs/:id is {success, data} with the seed fields and the additions', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const created = await sendBulk(ctx, tenant, { type: 'text', content: 'fields', recipients: phones(11) });
    const body = expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'GET', `/messages/bulk-jobs/${created.jobId}`));
    expect(body.success).toBe(true);
    expect(Object.keys(body.data).sort()).toEqual(
      [
        'id',
        'status',
        'deviceId',
        'type',
        'totalContacts',
        'sentCount',
        'failedCount',
        'deliveredCount',
        'readCount',
        'cancelledCount',
        'scheduledAt',
        'createdAt',
        'completedAt',
        'cancelledAt',
      ].sort(),
    );
    expect(body.data).toMatchObject({ id: created.jobId, deviceId: device.id, type: 'TEXT', totalContacts: 11, scheduledAt: null, cancelledAt: null });
    expect(body.data.createdAt).toMatch(ISO_MS);
    expectConsistent(body.data);

    const done = await waitForJob(ctx, tenant, created.jobId, (job) => job.status === 'COMPLETED' && job.readCount === 11, 'COMPLETED and all read');
    expect(done).toMatchObject({ totalContacts: 11, sentCount: 11, failedCount: 0, deliveredCount: 11, readCount: 11, cancelledCount: 0 });
    expect(done.completedAt).toMatch(ISO_MS);
    expect(new Date(done.completedAt!).getTime()).toBeGreaterThanOrEqual(new Date(done.createdAt).getTime());
    expectError(await call(ctx, tenant, 'GET', '/messages/bulk-jobs/job_nope'), 404, 'NOT_FOUND');
  });
});

describe('a job of 300 recipients', () => {
  it('ends COMPLETED with exact counters; 0000 numbers fail, 0001 are never delivered, 0002 never read, 0003 retried; the network got each recipient once', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const magic = {
      lost: [phone('0000'), phone('0000'), phone('0000'), phone('0000'), phone('0000')],
      undelivered: [phone('0001'), phone('0001')],
      unread: [phone('0002'), phone('0002'), phone('0002')],
      flaky: [phone('0003'), phone('0003')],
    };
    const special = [...magic.lost, ...magic.undelivered, ...magic.unread, ...magic.flaky];
    const normal = phones(300 - special.length);
    // Spread the magic numbers through the list.
    const recipients = [...normal];
    special.forEach((number, index) => recipients.splice(index * 23, 0, number));
    expect(new Set(recipients).size).toBe(300);

    const created = await sendBulk(ctx, tenant, bulkText(recipients));
    expect(created).toMatchObject({ status: 'PROCESSING', totalContacts: 300 });
    expect(created.message).toMatch(/\b300 recipients\b/);
    expect(await usedMessages(ctx, tenant)).toBe(300);

    // While it runs, the counters never contradict each other.
    const done = await waitForJob(
      ctx,
      tenant,
      created.jobId,
      (job) => {
        expectConsistent(job);
        return job.status === 'COMPLETED';
      },
      'COMPLETED',
      15_000,
    );
    const sent = 300 - magic.lost.length;
    expect(done).toMatchObject({ totalContacts: 300, sentCount: sent, failedCount: magic.lost.length, cancelledCount: 0 });
    expect(done.sentCount + done.failedCount).toBe(done.totalContacts);

    // Receipts keep coming after completion; they reach exactly these values.
    const delivered = sent - magic.undelivered.length;
    const read = delivered - magic.unread.length;
    const final = await waitForJob(
      ctx,
      tenant,
      created.jobId,
      (job) => {
        expectConsistent(job);
        return job.deliveredCount === delivered && job.readCount === read;
      },
      `deliveredCount ${delivered} and readCount ${read}`,
      10_000,
    );
    expect(final).toMatchObject({ status: 'COMPLETED', sentCount: sent, failedCount: magic.lost.length });

    // The failed ones are the 0000 numbers, refunded.
    const failed = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=FAILED`);
    expect(failed.data.map((m) => m.to).sort()).toEqual([...magic.lost].sort());
    expect(failed.data.every((m) => m.error?.code === 'RECIPIENT_NOT_ON_NETWORK')).toBe(true);
    expect(await usedMessages(ctx, tenant)).toBe(sent);
    const stillSent = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=SENT`);
    expect(stillSent.data.map((m) => m.to).sort()).toEqual([...magic.undelivered].sort());
    const onlyDelivered = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=DELIVERED`);
    expect(onlyDelivered.data.map((m) => m.to).sort()).toEqual([...magic.unread].sort());
    const readMessages = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=READ&limit=100&page=1`);
    expect(readMessages.meta.total).toBe(read);
    // Timestamps only move forward: sentAt ≤ deliveredAt ≤ readAt, on every message.
    for (let page = 1; page <= 3; page++) {
      for (const message of (await listMessages(ctx, tenant, `jobId=${created.jobId}&limit=100&page=${page}`)).data) {
        if (message.deliveredAt) expect(time(message.sentAt), JSON.stringify(message)).toBeLessThanOrEqual(time(message.deliveredAt));
        if (message.readAt) expect(time(message.deliveredAt), JSON.stringify(message)).toBeLessThanOrEqual(time(message.readAt));
      }
    }
    for (const to of magic.flaky) {
      const [message] = (await listMessages(ctx, tenant, `jobId=${created.jobId}&to=${to}`)).data;
      expect(message).toMatchObject({ status: 'READ', attempts: 2 });
    }

    // The network saw every recipient on it exactly once, none delivered twice.
    const network = await sandboxMessages(ctx, tenant);
    expect(network.meta.total).toBe(sent);
    const byRecipient = new Map(network.data.map((m) => [m.to, m]));
    expect(byRecipient.size).toBe(sent);
    for (const to of recipients) {
      const seen = byRecipient.get(to);
      if (magic.lost.includes(to)) {
        expect(seen).toBeUndefined();
        continue;
      }
      expect(seen, to).toBeDefined();
      expect(seen!.delivered).toBeLessThanOrEqual(1);
      expect(seen!.sendCalls).toBe(magic.flaky.includes(to) ? 2 : 1);
      expect(seen!.content).toBe('bulk hello');
    }
    expect(network.data.filter((m) => m.delivered === 1)).toHaveLength(delivered);
  });
});

describe('cancelling', () => {
  it('a scheduled job: CANCELLED with cancelledCount = total, refunded, nothing sent; a second cancel is 409', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const recipients = phones(20);
    const created = await sendBulk(ctx, tenant, bulkText(recipients, { scheduledAt: isoIn(3_600_000) }));
    expect(created.status).toBe('SCHEDULED');
    expect(created.message).toMatch(/\b20 recipients\b/);
    expect(await usedMessages(ctx, tenant)).toBe(20);
    await waitForFanOut(tenant, created.jobId, 20);

    const cancelled = expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`));
    expect(cancelled.data).toMatchObject({ id: created.jobId, status: 'CANCELLED', totalContacts: 20, cancelledCount: 20, sentCount: 0, failedCount: 0 });
    expect(cancelled.data.cancelledAt).toMatch(ISO_MS);
    expect(await usedMessages(ctx, tenant)).toBe(0);
    const messages = await listMessages(ctx, tenant, `jobId=${created.jobId}&limit=100`);
    expect(messages.data.every((m) => m.status === 'CANCELLED')).toBe(true);
    expect((await sandboxMessages(ctx, tenant)).meta.total).toBe(0);

    const again = expectError(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`), 409, 'CONFLICT');
    expect(again.error.details).toEqual({ status: 'CANCELLED' });
    const listed = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?status=CANCELLED'));
    expect(listed.data.map((job) => job.id)).toEqual([created.jobId]);
  });

  it('a job cancelled at once (racing its fan-out): every recipient is counted cancelled and refunded, none left waiting', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const created = await sendBulk(ctx, tenant, bulkText(phones(15), { scheduledAt: isoIn(3_600_000) }));
    const cancelled = expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`));
    expect(cancelled.data).toMatchObject({ status: 'CANCELLED', cancelledCount: 15 });
    expect(await usedMessages(ctx, tenant)).toBe(0);
    // Whatever the fan-out did or does, no message of the job is left waiting.
    await sleep(200);
    const waiting = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=SCHEDULED`);
    expect(waiting.meta.total).toBe(0);
    expect((await getJob(ctx, tenant, created.jobId)).cancelledCount).toBe(15);
  });

  it('a running job: only what has not been handed to the network is cancelled; sent + failed + cancelled = total', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    // The 0003 recipients wait about a second for their retry: the job is still PROCESSING then.
    // A held drop of the connection right after keeps those retries from going out, unless the
    // machine stalled past their second first; the counts below hold either way.
    const flaky = [phone('0003'), phone('0003'), phone('0003')];
    const created = await sendBulk(ctx, tenant, bulkText([...phones(9), ...flaky]));
    await waitForJob(ctx, tenant, created.jobId, (job) => job.sentCount === 9, '9 sent, 3 waiting for a retry');
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'network', hold: true }));
    const cancelled = expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`));
    const { sentCount, cancelledCount } = cancelled.data;
    expect(cancelled.data).toMatchObject({ status: 'CANCELLED', totalContacts: 12, failedCount: 0 });
    expect(sentCount).toBeGreaterThanOrEqual(9);
    expect(cancelledCount).toBeGreaterThanOrEqual(1);
    expect(sentCount + cancelledCount).toBe(12);
    expect(await usedMessages(ctx, tenant)).toBe(sentCount);
    const cancelledMessages = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=CANCELLED`);
    expect(cancelledMessages.data).toHaveLength(cancelledCount);
    for (const message of cancelledMessages.data) expect(flaky).toContain(message.to);
    // Nothing cancelled goes out once the device is back.
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/restore`));
    await waitForDevice(ctx, tenant, device.id, 'CONNECTED');
    expect((await getJob(ctx, tenant, created.jobId)).sentCount).toBe(sentCount);
  });

  it('a COMPLETED job cannot be cancelled: 409 CONFLICT', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const created = await sendBulk(ctx, tenant, bulkText(phones(11)));
    await waitForJob(ctx, tenant, created.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');
    const conflict = expectError(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`), 409, 'CONFLICT');
    expect(conflict.error.details).toEqual({ status: 'COMPLETED' });
    expect((await getJob(ctx, tenant, created.jobId)).status).toBe('COMPLETED');
    expect(await usedMessages(ctx, tenant)).toBe(11);
  });

  it('cancelling single messages of a job counts them; a scheduled job whose messages are all cancelled is finished', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const created = await sendBulk(ctx, tenant, bulkText(phones(11), { scheduledAt: isoIn(3_600_000) }));
    const fanned = await waitForFanOut(tenant, created.jobId, 11);
    const [one, ...rest] = fanned.data;
    expect(one!.status).toBe('SCHEDULED');
    expectOk(await call(ctx, tenant, 'POST', `/messages/${one!.id}/cancel`));
    expect(await getJob(ctx, tenant, created.jobId)).toMatchObject({ status: 'SCHEDULED', cancelledCount: 1 });
    expect(await usedMessages(ctx, tenant)).toBe(10);
    for (const message of rest) expectOk(await call(ctx, tenant, 'POST', `/messages/${message.id}/cancel`));
    const job = await getJob(ctx, tenant, created.jobId);
    expect(job).toMatchObject({ cancelledCount: 11, sentCount: 0, failedCount: 0 });
    // Every message is final: the job is finished (COMPLETED; CANCELLED is for a cancelled job).
    expect(job.status, 'a job with nothing left to send must not stay SCHEDULED').toBe('COMPLETED');
    expect(job.completedAt).toMatch(ISO_MS);
    expect(await usedMessages(ctx, tenant)).toBe(0);
  });

  it('a scheduled job whose device is unlinked: its messages fail with DEVICE_LOGGED_OUT (refunded) and the job is finished', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const created = await sendBulk(ctx, tenant, bulkText(phones(12), { scheduledAt: isoIn(3_600_000) }));
    await waitForFanOut(tenant, created.jobId, 12);
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'logout' }));
    const job = await waitForJob(ctx, tenant, created.jobId, (j) => j.failedCount === 12, 'all 12 failed');
    expect(job).toMatchObject({ status: 'COMPLETED', sentCount: 0, failedCount: 12 });
    const failed = await listMessages(ctx, tenant, `jobId=${created.jobId}&status=FAILED&limit=100`);
    expect(failed.data.every((m) => m.error?.code === 'DEVICE_LOGGED_OUT')).toBe(true);
    expect(await usedMessages(ctx, tenant)).toBe(0);
  });
});

describe('tenancy', () => {
  it("another account's job answers 404 on read and cancel and is not listed", async () => {
    const owner = await createTenant(ctx);
    const stranger = await createTenant(ctx);
    await linkDevice(ctx, owner);
    const created = await sendBulk(ctx, owner, bulkText(phones(11), { scheduledAt: isoIn(3_600_000) }));
    expectError(await call(ctx, stranger, 'GET', `/messages/bulk-jobs/${created.jobId}`), 404, 'NOT_FOUND');
    expectError(await call(ctx, stranger, 'POST', `/messages/bulk-jobs/${created.jobId}/cancel`), 404, 'NOT_FOUND');
    expect(expectOk<PageBody<BulkJobBody>>(await call(ctx, stranger, 'GET', '/messages/bulk-jobs')).meta.total).toBe(0);
    expect((await listMessages(ctx, stranger, `jobId=${created.jobId}`)).meta.total).toBe(0);
    expect((await getJob(ctx, owner, created.jobId)).status).toBe('SCHEDULED');
    expectError(await call(ctx, owner, 'POST', '/messages/bulk-jobs/job_nope/cancel'), 404, 'NOT_FOUND');
  });
});
