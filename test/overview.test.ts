/**
 * GET /account/overview through the real app and worker on the sandbox network: after a bulk job
 * with the sandbox's magic endings (0000 fails, 0001 stays SENT, 0002 is never read) and an
 * incoming message, today's counts equal the job's own counters and the messages the API lists;
 * rates, failures by code, devices and webhook health; 7/30/90 days; bad `days`; tenancy; and an
 * account delete removing its counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OverviewJson } from '../src/messaging/overview-record.js';
import { createTenant, type TestContext } from './helpers.js';
import {
  call,
  createMessagingApp,
  expectError,
  expectOk,
  linkDevice,
  listMessages,
  phone,
  phones,
  sendBulk,
  waitFor,
  waitForJob,
  type DataBody,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

type Tenant = Awaited<ReturnType<typeof createTenant>>;

async function overview(tenant: Tenant, query = ''): Promise<OverviewJson> {
  return expectOk<DataBody<OverviewJson>>(await call(ctx, tenant, 'GET', `/account/overview${query}`)).data;
}

/** How many of the account's messages the API lists with this query. */
async function total(tenant: Tenant, query: string): Promise<number> {
  return (await listMessages(ctx, tenant, `${query}&limit=1`)).meta.total;
}

describe('GET /account/overview', () => {
  it("counts a bulk job's outcomes on today's row, equal to the job's counters and the API's listings", async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant, { name: 'Shop' });
    const normal = phones(16);
    const recipients = [...normal, phone('0000'), phone('0000'), phone('0001'), phone('0002')];
    const { jobId } = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'hello', recipients });
    // Receipts keep arriving after the job completes: wait for the last read.
    const job = await waitForJob(ctx, tenant, jobId, (j) => j.status === 'COMPLETED' && j.readCount === 16 && j.deliveredCount === 17, 'every receipt', 20_000);
    expect(job).toMatchObject({ sentCount: 18, failedCount: 2 });

    expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: normal[0], content: 'thanks!' }), 202);
    await waitFor(async () => ((await total(tenant, 'direction=in')) === 1 ? true : undefined), 5_000, 'the incoming message');

    const data = await overview(tenant, '?days=7');
    expect(data.days).toBe(7);
    expect(data.daily).toHaveLength(7);
    expect(data.daily.at(-1)!.day).toBe(data.to);
    expect(data.daily[0]!.day).toBe(data.from);
    expect(data.to).toBe(new Date().toISOString().slice(0, 10));
    expect(data.totals).toEqual({ sent: job.sentCount, delivered: job.deliveredCount, read: job.readCount, failed: job.failedCount, incoming: 1 });
    expect(data.daily.at(-1)).toEqual({ day: data.to, ...data.totals });
    // The same figures as the listings: SENT or later counts as sent, DELIVERED or later as delivered.
    const [sent, delivered, read, failed] = await Promise.all(['SENT', 'DELIVERED', 'READ', 'FAILED'].map((status) => total(tenant, `status=${status}&direction=out`)));
    expect(data.totals.read).toBe(read);
    expect(data.totals.delivered).toBe(delivered! + read!);
    expect(data.totals.sent).toBe(sent! + delivered! + read!);
    expect(data.totals.failed).toBe(failed);
    expect(data.rates.delivery).toBeCloseTo(17 / 18);
    expect(data.rates.read).toBeCloseTo(16 / 17);
    expect(data.rates.failure).toBeCloseTo(2 / 20);
    expect(data.failuresByCode).toEqual([{ code: 'RECIPIENT_NOT_ON_NETWORK', count: 2 }]);
    expect(data.devices).toHaveLength(1);
    expect(data.devices[0]).toMatchObject({ id: device.id, name: 'Shop', status: 'CONNECTED', totals: data.totals, warmup: null });
    expect(data.webhooks).toEqual([]);

    // 30 (the default) and 90 days hold the same totals.
    const month = await overview(tenant);
    expect(month.days).toBe(30);
    expect(month.daily).toHaveLength(30);
    expect(month.totals).toEqual(data.totals);
    expect((await overview(tenant, '?days=90')).daily).toHaveLength(90);
  }, 40_000);

  it('is empty for a new account, with null rates', async () => {
    const tenant = await createTenant(ctx);
    const data = await overview(tenant);
    expect(data.totals).toEqual({ sent: 0, delivered: 0, read: 0, failed: 0, incoming: 0 });
    expect(data.rates).toEqual({ delivery: null, read: null, failure: null });
    expect(data.daily.every((day) => day.sent === 0 && day.incoming === 0)).toBe(true);
    expect(data.failuresByCode).toEqual([]);
    expect(data.devices).toEqual([]);
  });

  it('shows webhook endpoints with their health', async () => {
    const tenant = await createTenant(ctx);
    const created = expectOk<DataBody<{ id: string }>>(await call(ctx, tenant, 'POST', '/webhooks', { url: 'https://1.1.1.1/hooks/waygate' }), 201).data;
    const data = await overview(tenant);
    expect(data.webhooks).toHaveLength(1);
    expect(data.webhooks[0]).toMatchObject({ id: created.id, active: true, health: { state: 'NO_ATTEMPTS', consecutiveFailures: 0, lastSuccessAt: null, lastFailureAt: null } });
  });

  it('refuses days other than 7, 30 and 90, and unknown parameters, naming the field', async () => {
    const tenant = await createTenant(ctx);
    for (const query of ['?days=14', '?days=abc', '?days=-7', '?from=2026-01-01']) {
      const body = expectError(await call(ctx, tenant, 'GET', `/account/overview${query}`), 400, 'VALIDATION_ERROR');
      expect(JSON.stringify(body.error.details), query).toMatch(/days|from/);
    }
  });

  it("needs account:read, and shows only the caller's account", async () => {
    const reader = await createTenant(ctx, { scopes: ['messages:read'] });
    expectError(await call(ctx, reader, 'GET', '/account/overview'), 403, 'FORBIDDEN');
    const other = await createTenant(ctx);
    const busy = await createTenant(ctx);
    const device = await linkDevice(ctx, busy);
    expectOk(await call(ctx, busy, 'POST', '/sandbox/incoming', { deviceId: device.id, from: phone(), content: 'hi' }), 202);
    await waitFor(async () => ((await overview(busy)).totals.incoming === 1 ? true : undefined), 5_000, 'the incoming count');
    expect((await overview(other)).totals.incoming).toBe(0);
  });

  it('forgets the counts of a deleted account', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: phone(), content: 'hi' }), 202);
    await waitFor(async () => ((await overview(tenant)).totals.incoming === 1 ? true : undefined), 5_000, 'the incoming count');
    await ctx.database.query('DELETE FROM accounts WHERE id = $1', [tenant.accountId]);
    const [row] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM message_days WHERE account_id = $1', [tenant.accountId]);
    expect(row!.n).toBe(0);
  });
});
