/**
 * Idempotency-Key and the plan's message quota through the real app and a real worker.
 * Idempotency: a repeat with the same body replays the first response and sends nothing; with a
 * different body it is 409 IDEMPOTENCY_KEY_REUSED; concurrent repeats make one set of messages;
 * keys are per account; a failed first attempt frees the key. Quota (plan free, 50 a month): a
 * send that does not fit is 402 QUOTA_EXCEEDED with details and creates nothing; FAILED and
 * CANCELLED messages are given back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type Tenant, type TestContext } from './helpers.js';
import {
  createMessagingApp,
  call,
  expectError,
  expectFieldError,
  expectOk,
  isoIn,
  linkDevice,
  listMessages,
  phone,
  phones,
  sandboxMessages,
  send,
  sendBulk,
  sendDirect,
  usedMessages,
  waitForJob,
  type AccountBody,
  type BulkSendBody,
  type DataBody,
  type DirectSendBody,
  type PageBody,
  type BulkJobBody,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

const keyed = (tenant: Tenant, key: string, payload: Record<string, unknown>) => send(ctx, tenant, payload, { 'Idempotency-Key': key });

describe('Idempotency-Key', () => {
  it('the same key and body replays the first response (same ids) and sends nothing twice', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const to = phone();
    const payload = { type: 'TEXT', content: 'once', recipients: [to] };
    const first = await keyed(tenant, 'order-1001', payload);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const firstBody = first.json() as DirectSendBody;

    // Same body, keys in another order: still the same request.
    const again = await keyed(tenant, 'order-1001', { recipients: [to], content: 'once', type: 'TEXT' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(firstBody);
    const third = await ctx.app.inject({ method: 'POST', url: '/v1/messages/send', headers: { 'X-API-Key': tenant.token, 'Idempotency-Key': 'order-1001' }, payload });
    expect(third.json()).toEqual(firstBody);

    expect((await listMessages(ctx, tenant)).meta.total).toBe(1);
    const network = await sandboxMessages(ctx, tenant, { to });
    expect(network.meta.total).toBe(1);
    expect(network.data[0]!.sendCalls).toBe(1);
    expect(await usedMessages(ctx, tenant)).toBe(1);

    // Another key is another request.
    const other = await keyed(tenant, 'order-1002', payload);
    expect((other.json() as DirectSendBody).message.id).not.toBe(firstBody.message.id);
    expect((await listMessages(ctx, tenant)).meta.total).toBe(2);
  });

  it('the same key with a different body is 409 IDEMPOTENCY_KEY_REUSED and sends nothing', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const to = phone();
    expectOk(await keyed(tenant, 'k-1', { type: 'TEXT', content: 'first', recipients: [to] }));
    expectError(await keyed(tenant, 'k-1', { type: 'TEXT', content: 'second', recipients: [to] }), 409, 'IDEMPOTENCY_KEY_REUSED');
    expectError(await keyed(tenant, 'k-1', { type: 'TEXT', content: 'first', recipients: [to, phone()] }), 409, 'IDEMPOTENCY_KEY_REUSED');
    expect((await listMessages(ctx, tenant)).meta.total).toBe(1);
    expect(await usedMessages(ctx, tenant)).toBe(1);
  });

  it('concurrent duplicates (5 at once) make one set of messages, and every response is the same', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const recipients = phones(3);
    const payload = { type: 'TEXT', content: 'concurrent', recipients };
    const responses = await Promise.all(Array.from({ length: 5 }, () => keyed(tenant, 'burst-1', payload)));
    const statuses = responses.map((r) => r.statusCode);
    expect(new Set(statuses).size, statuses.join(',')).toBe(1);
    expect([200, 202]).toContain(statuses[0]);
    const bodies = responses.map((r) => r.json() as DirectSendBody);
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(4);

    expect((await listMessages(ctx, tenant)).meta.total).toBe(3);
    const network = await sandboxMessages(ctx, tenant);
    expect(network.data.map((m) => m.to).sort()).toEqual([...recipients].sort());
    expect(network.data.every((m) => m.sendCalls === 1)).toBe(true);
    expect(await usedMessages(ctx, tenant)).toBe(3);
  });

  it('a bulk send with a key: the repeat answers the same jobId and creates no second job', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const payload = { type: 'TEXT', content: 'bulk once', recipients: phones(12) };
    const first = expectOk<BulkSendBody>(await keyed(tenant, 'bulk-1', payload), 202);
    const second = await keyed(tenant, 'bulk-1', payload);
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual(first);
    const jobs = expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs'));
    expect(jobs.data.map((job) => job.id)).toEqual([first.jobId]);
    await waitForJob(ctx, tenant, first.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');
    expect((await sandboxMessages(ctx, tenant)).meta.total).toBe(12);
    expect(await usedMessages(ctx, tenant)).toBe(12);
  });

  it('keys belong to one account: another account may use the same key for its own send', async () => {
    const a = await createTenant(ctx);
    const b = await createTenant(ctx);
    await linkDevice(ctx, a);
    await linkDevice(ctx, b);
    const first = expectOk<DirectSendBody>(await keyed(a, 'shared-key', { type: 'TEXT', content: 'a', recipients: [phone()] }));
    const second = expectOk<DirectSendBody>(await keyed(b, 'shared-key', { type: 'TEXT', content: 'b', recipients: [phone()] }));
    expect(second.message.id).not.toBe(first.message.id);
    expect(second.message.content).toBe('b');
    expect((await listMessages(ctx, b)).meta.total).toBe(1);
  });

  it('a request that fails leaves the key free: the retry is carried out', async () => {
    const tenant = await createTenant(ctx);
    const payload = { type: 'TEXT', content: 'retry me', recipients: [phone()] };
    expectError(await keyed(tenant, 'after-link', payload), 409, 'NO_CONNECTED_DEVICE');
    await linkDevice(ctx, tenant);
    const retried = await keyed(tenant, 'after-link', payload);
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect((await listMessages(ctx, tenant)).meta.total).toBe(1);
  });

  it('a key over 255 characters is a 400', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    expectFieldError(await keyed(tenant, 'k'.repeat(256), { type: 'TEXT', content: 'x', recipients: [phone()] }), 'idempotency-key');
    expectOk(await keyed(tenant, 'k'.repeat(255), { type: 'TEXT', content: 'x', recipients: [phone()] }));
    expect((await listMessages(ctx, tenant)).meta.total).toBe(1);
  });
});

describe('quota (plan free: 50 messages a month)', () => {
  it('a send of 51 recipients is 402 QUOTA_EXCEEDED with {limit, used, requested, resetsAt} and creates nothing; 50 fit; then one more is 402', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    const account = expectOk<DataBody<AccountBody>>(await call(ctx, tenant, 'GET', '/account')).data;
    expect(account.limits.messages).toBe(50);

    const over = expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(51) }), 402, 'QUOTA_EXCEEDED');
    expect(over.error.details).toEqual({ limit: 50, used: 0, requested: 51, resetsAt: account.period.end });
    expect(new Date(account.period.end).getTime()).toBeGreaterThan(Date.now());
    expect(await usedMessages(ctx, tenant)).toBe(0);
    expect((await listMessages(ctx, tenant)).meta.total).toBe(0);
    expect(expectOk<PageBody<BulkJobBody>>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs')).meta.total).toBe(0);

    const fits = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(50) });
    expect(fits.totalContacts).toBe(50);
    expect(await usedMessages(ctx, tenant)).toBe(50);

    const oneMore = expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', to: phone() }), 402, 'QUOTA_EXCEEDED');
    expect(oneMore.error.details).toEqual({ limit: 50, used: 50, requested: 1, resetsAt: account.period.end });
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', to: phone(), scheduledAt: isoIn(3_600_000) }), 402, 'QUOTA_EXCEEDED');
    await waitForJob(ctx, tenant, fits.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');
    expect((await listMessages(ctx, tenant)).meta.total).toBe(50);
    expect(await usedMessages(ctx, tenant)).toBe(50);
  });

  it('a direct send that does not fit is refused whole: 402, no message created', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    await sendBulk(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(45) });
    const refused = expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(6) }), 402, 'QUOTA_EXCEEDED');
    expect(refused.error.details).toMatchObject({ limit: 50, used: 45, requested: 6 });
    expect(await usedMessages(ctx, tenant)).toBe(45);
    const fits = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(5) });
    expect(fits.messages).toHaveLength(5);
    expect(await usedMessages(ctx, tenant)).toBe(50);
  });

  it('concurrent direct sends, accepted together in one statement, each get their own answer: the quota is exact, another account is unaffected', async () => {
    // 40 of the free plan's 50 used: of 8 concurrent sends of 2 recipients, exactly 5 fit.
    const tight = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tight);
    await sendBulk(ctx, tight, { type: 'TEXT', content: 'x', recipients: phones(40) });
    const roomy = await createTenant(ctx);
    await linkDevice(ctx, roomy);
    const noDevice = await createTenant(ctx);
    const responses = await Promise.all([
      ...Array.from({ length: 8 }, () => send(ctx, tight, { type: 'TEXT', content: 'x', recipients: phones(2) })),
      ...Array.from({ length: 8 }, () => send(ctx, roomy, { type: 'TEXT', content: 'x', recipients: phones(2) })),
      send(ctx, noDevice, { type: 'TEXT', content: 'x', recipients: phones(2) }),
    ]);
    const tightCodes = responses.slice(0, 8).map((r) => r.statusCode);
    expect(tightCodes.filter((code) => code === 200)).toHaveLength(5);
    expect(tightCodes.filter((code) => code === 402)).toHaveLength(3);
    for (const response of responses.slice(0, 8).filter((r) => r.statusCode === 402)) {
      expect(expectError(response, 402, 'QUOTA_EXCEEDED').error.details).toMatchObject({ limit: 50, requested: 2 });
    }
    expect(await usedMessages(ctx, tight)).toBe(50);
    expect(responses.slice(8, 16).map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    expect(await usedMessages(ctx, roomy)).toBe(16);
    expectError(responses[16]!, 409, 'NO_CONNECTED_DEVICE');
    expect(await usedMessages(ctx, noDevice)).toBe(0);
    expect((await listMessages(ctx, tight)).meta.total).toBe(50);
    expect((await listMessages(ctx, roomy)).meta.total).toBe(16);
  });

  it('FAILED (0000) and CANCELLED messages are given back and make room for new sends', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    // 44 normal + 4 numbers not on the network, and 2 scheduled: 50 reserved.
    const bulk = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [...phones(44), phone('0000'), phone('0000'), phone('0000'), phone('0000')] });
    const scheduled = expectOk<DirectSendBody>(await send(ctx, tenant, { type: 'TEXT', content: 'later', recipients: phones(2), scheduledAt: isoIn(3_600_000) }), 202);
    await waitForJob(ctx, tenant, bulk.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');
    const job = expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'GET', `/messages/bulk-jobs/${bulk.jobId}`)).data;
    expect(job).toMatchObject({ sentCount: 44, failedCount: 4 });
    expect(await usedMessages(ctx, tenant)).toBe(46);

    expectOk(await call(ctx, tenant, 'POST', `/messages/${scheduled.messages[0]!.id}/cancel`));
    expect(await usedMessages(ctx, tenant)).toBe(45);

    // Exactly 5 fit now, 6 do not.
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(6) }), 402, 'QUOTA_EXCEEDED');
    await sendDirect(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(5) });
    expect(await usedMessages(ctx, tenant)).toBe(50);

    // A direct send to a number not on the network is refunded at once, too.
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', to: phone('0000') }), 402, 'QUOTA_EXCEEDED');
    expectOk(await call(ctx, tenant, 'POST', `/messages/${scheduled.messages[1]!.id}/cancel`));
    const lost = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'x', to: phone('0000') });
    expect(lost.message.status).toBe('FAILED');
    expect(await usedMessages(ctx, tenant)).toBe(49);
  });

  it('a cancelled bulk job gives its whole reservation back', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    const job = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'x', recipients: phones(50), scheduledAt: isoIn(3_600_000) });
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', to: phone() }), 402, 'QUOTA_EXCEEDED');
    expectOk(await call(ctx, tenant, 'POST', `/messages/bulk-jobs/${job.jobId}/cancel`));
    expect(await usedMessages(ctx, tenant)).toBe(0);
    await sendDirect(ctx, tenant, { type: 'TEXT', content: 'x', to: phone() });
    expect(await usedMessages(ctx, tenant)).toBe(1);
  });
});
