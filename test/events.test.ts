/**
 * GET /events: the durable event log a consumer backfills from. Every state change that makes
 * an event numbers it per account 1, 2, 3 … with no gaps, even when many are written at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { call, expectError, expectFieldError, expectOk, linkDevice, phone, phones, sendBulk, sendDirect, waitFor } from './messaging-helpers.js';

interface EventBody {
  id: string;
  seq: number;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}
interface EventsBody {
  success: true;
  data: EventBody[];
  meta: { after: number; limit: number; lastSeq: number };
}

async function events(ctx: TestContext, tenant: Tenant, query = ''): Promise<EventsBody> {
  return expectOk<EventsBody>(await call(ctx, tenant, 'GET', `/events${query ? `?${query}` : ''}`));
}

/** Every event of the tenant, read page by page with `after`. */
async function allEvents(ctx: TestContext, tenant: Tenant, limit: number): Promise<EventBody[]> {
  const found: EventBody[] = [];
  for (let after = 0; ; ) {
    const page = await events(ctx, tenant, `after=${after}&limit=${limit}`);
    expect(page.meta).toMatchObject({ after, limit });
    if (page.data.length === 0) return found;
    expect(page.data.length).toBeLessThanOrEqual(limit);
    found.push(...page.data);
    after = page.data[page.data.length - 1]!.seq;
  }
}

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp({ ALLOW_PRIVATE_URLS: 'true', WEBHOOK_RETRY_SCHEDULE: '0,100ms,200ms' }, { worker: true });
});
afterAll(async () => ctx.close());

describe('GET /events', () => {
  it('lists nothing for a new account, with lastSeq 0', async () => {
    const tenant = await createTenant(ctx);
    const body = await events(ctx, tenant);
    expect(body).toEqual({ success: true, data: [], meta: { after: 0, limit: 100, lastSeq: 0 } });
  });

  it('numbers every event 1..N without gaps, pages with after/limit, filters by type, and reports lastSeq', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    await sendDirect(ctx, tenant, { type: 'TEXT', content: 'one', recipients: [phone()] });
    const { jobId } = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'bulk', recipients: [...phones(11), phone('0000')] });
    // Incoming messages in parallel: concurrent writers still get consecutive numbers.
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: phone(), content: `in ${i}` }).then((r) => expectOk(r, 202))),
    );
    // CONNECTED; SENT, DELIVERED, READ of the direct message; 11 × 3 + 1 FAILED of the job; completed; 20 received.
    const expected = 1 + 3 + 34 + 1 + 20;
    await waitFor(async () => (await events(ctx, tenant, 'limit=1')).meta.lastSeq >= expected, 20_000, `${expected} events`);

    const list = await allEvents(ctx, tenant, 7);
    expect(list).toHaveLength(expected);
    expect(list.map((e) => e.seq)).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
    expect(new Set(list.map((e) => e.id)).size).toBe(expected);
    for (const event of list) {
      expect(event.id).toMatch(/^evt_/);
      expect(event.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    const count = (type: string) => list.filter((e) => e.type === type).length;
    expect(count('device.status')).toBe(1);
    expect(count('message.status')).toBe(3 + 34);
    expect(count('bulk_job.completed')).toBe(1);
    expect(count('message.received')).toBe(20);
    expect(list.find((e) => e.type === 'bulk_job.completed')!.data).toMatchObject({ id: jobId, status: 'COMPLETED' });

    // lastSeq is the newest seq whatever the page shows.
    const page = await events(ctx, tenant, 'after=5&limit=3');
    expect(page.data.map((e) => e.seq)).toEqual([6, 7, 8]);
    expect(page.meta).toEqual({ after: 5, limit: 3, lastSeq: expected });
    expect((await events(ctx, tenant, `after=${expected}`)).data).toEqual([]);
    expect((await events(ctx, tenant, `after=${expected + 10}`)).meta.lastSeq).toBe(expected);

    // type: only that type, still in seq order, after applies to the seq.
    const received = await events(ctx, tenant, 'type=message.received&limit=1000');
    expect(received.data).toHaveLength(20);
    expect(received.data.every((e) => e.type === 'message.received' && e.data.direction === 'in')).toBe(true);
    const seqs = received.data.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const tail = await events(ctx, tenant, `type=message.received&after=${seqs[9]}&limit=1000`);
    expect(tail.data.map((e) => e.seq)).toEqual(seqs.slice(10));
    expect(tail.meta.lastSeq).toBe(expected);
    const deviceEvents = await events(ctx, tenant, 'type=device.status');
    expect(deviceEvents.data).toHaveLength(1);
    expect(deviceEvents.data[0]!.data).toMatchObject({ id: device.id, status: 'CONNECTED' });
  });

  it('writes exactly one bulk_job.completed when the last message of a job is sent (every recipient ordinary)', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const job = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'all ordinary', recipients: phones(25) });
    await waitFor(async () => (await events(ctx, tenant, 'type=bulk_job.completed')).data.length > 0, 10_000, 'the bulk_job.completed event');
    const completed = (await events(ctx, tenant, 'type=bulk_job.completed')).data;
    expect(completed).toHaveLength(1);
    expect(completed[0]!.data).toMatchObject({ id: job.jobId, status: 'COMPLETED', sentCount: 25, totalContacts: 25 });
    const sent = (await events(ctx, tenant, 'type=message.status&limit=1000')).data.filter((e) => e.data.status === 'SENT');
    expect(sent).toHaveLength(25);
  });

  it('shows an account its own events only', async () => {
    const a = await createTenant(ctx);
    const b = await createTenant(ctx);
    await linkDevice(ctx, a);
    await waitFor(async () => (await events(ctx, a)).meta.lastSeq >= 1, 5_000, 'the device event');
    const other = await events(ctx, b);
    expect(other.data).toEqual([]);
    expect(other.meta.lastSeq).toBe(0);
  });

  it('validates the query and needs the events:read scope', async () => {
    const tenant = await createTenant(ctx);
    expectFieldError(await call(ctx, tenant, 'GET', '/events?limit=0'), 'limit');
    expectFieldError(await call(ctx, tenant, 'GET', '/events?limit=1001'), 'limit');
    expectFieldError(await call(ctx, tenant, 'GET', '/events?after=-1'), 'after');
    expectFieldError(await call(ctx, tenant, 'GET', '/events?type=nope'), 'type');
    const limited = await createTenant(ctx, { scopes: ['messages:read'] });
    expectError(await call(ctx, limited, 'GET', '/events'), 403, 'FORBIDDEN');
    const reader = await createTenant(ctx, { scopes: ['events:read'] });
    expectOk(await call(ctx, reader, 'GET', '/events'));
  });
});
