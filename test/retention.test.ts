/**
 * Retention: events past EVENT_RETENTION_DAYS go as a prefix of each account's sequence (the kept
 * window stays gap-free even when seqs and timestamps disagree), with their deliveries; delivery
 * attempts past WEBHOOK_ATTEMPT_RETENTION_DAYS go on their own; recent rows and other accounts'
 * rows stay; a backlog is taken a bounded batch at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents } from '../src/events/event-store.js';
import { Housekeeping } from '../src/housekeeping.js';
import { workBudget } from '../src/platform/work-budget.js';
import { createTestApp, createTenant, type Tenant, type TestContext } from './helpers.js';
import { call } from './messaging-helpers.js';
import pino from 'pino';

describe('retention of events and delivery attempts', () => {
  let ctx: TestContext;
  let housekeeping: Housekeeping;

  beforeAll(async () => {
    ctx = await createTestApp({ EVENT_RETENTION_DAYS: '30', WEBHOOK_ATTEMPT_RETENTION_DAYS: '7' });
    housekeeping = new Housekeeping(ctx.database, ctx.config, pino({ level: 'silent' }));
  });
  afterAll(async () => ctx?.close());

  const seqsOf = async (tenant: Tenant): Promise<number[]> =>
    (await ctx.database.query<{ seq: string }>('SELECT seq FROM events WHERE account_id = $1 AND seq IS NOT NULL ORDER BY seq', [tenant.accountId])).map((r) => Number(r.seq));
  const age = (tenant: Tenant, seqs: string, days: number) =>
    ctx.database.query(`UPDATE events SET created_at = now() - $2::int * interval '1 day' WHERE account_id = $1 AND seq IN (${seqs})`, [tenant.accountId, days]);

  it('prunes each account’s expired events as a prefix of its sequence, with their deliveries; the kept window stays gap-free', async () => {
    const tenant = await createTenant(ctx);
    const other = await createTenant(ctx);
    const endpoint = await call(ctx, tenant, 'POST', '/webhooks', { url: 'https://1.1.1.1/hooks/retention' });
    expect(endpoint.statusCode).toBe(201);
    const items = Array.from({ length: 30 }, (_, i) => ({ accountId: tenant.accountId, type: 'message.received' as const, data: { n: i + 1 } }));
    await ctx.database.transaction((tx) => appendEvents(tx, items));
    await ctx.database.transaction((tx) => appendEvents(tx, [{ accountId: other.accountId, type: 'message.received', data: { n: 1 } }]));
    // 1–20 expired but 12 (a transaction that took its seq before an older one's); 22 expired though 21 is not.
    await age(tenant, '1,2,3,4,5,6,7,8,9,10,11,13,14,15,16,17,18,19,20,22', 40);
    await age(tenant, '12', 29);
    // The other account's only event is recent: it stays.

    const deliveriesBefore = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1', [tenant.accountId]);
    expect(deliveriesBefore[0]!.n).toBe(30);

    const pruned = await housekeeping.pruneOnce();
    expect(pruned.events).toBe(22);
    expect(await seqsOf(tenant)).toEqual(Array.from({ length: 8 }, (_, i) => 23 + i));
    expect(await seqsOf(other)).toEqual([1]);
    const deliveriesAfter = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1', [tenant.accountId]);
    expect(deliveriesAfter[0]!.n).toBe(8);

    // GET /events from the start answers the kept window, in order, with no gap.
    const listed = await call(ctx, tenant, 'GET', '/events?after=0&limit=100');
    expect(listed.statusCode).toBe(200);
    const body = listed.json<{ data: { seq: number }[]; meta: { lastSeq: number } }>();
    expect(body.data.map((e) => e.seq)).toEqual(Array.from({ length: 8 }, (_, i) => 23 + i));
    expect(body.meta.lastSeq).toBe(30);

    // Nothing left to prune: a second pass takes nothing.
    expect((await housekeeping.pruneOnce()).events).toBe(0);
  });

  it('prunes delivery attempts past their own age and keeps the deliveries', async () => {
    const tenant = await createTenant(ctx);
    expect((await call(ctx, tenant, 'POST', '/webhooks', { url: 'https://1.1.1.1/hooks/attempts' })).statusCode).toBe(201);
    await ctx.database.transaction((tx) => appendEvents(tx, [{ accountId: tenant.accountId, type: 'message.received', data: {} }]));
    const [delivery] = await ctx.database.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE account_id = $1', [tenant.accountId]);
    for (const days of [10, 9, 8, 1, 0]) {
      await ctx.database.query(
        `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error) VALUES ($1, now() - $2::int * interval '1 day', 500, 5, NULL)`,
        [delivery!.id, days],
      );
    }
    const pruned = await housekeeping.pruneOnce();
    expect(pruned.attempts).toBe(3);
    const left = await ctx.database.query<{ days: number }>(
      `SELECT round(extract(epoch FROM now() - attempted_at) / 86400)::int AS days FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempted_at`,
      [delivery!.id],
    );
    expect(left.map((r) => r.days)).toEqual([1, 0]);
    expect((await ctx.database.query('SELECT 1 FROM webhook_deliveries WHERE id = $1', [delivery!.id])).length).toBe(1);
  });

  it('takes a large backlog one bounded batch per statement', async () => {
    const tenant = await createTenant(ctx);
    const batch = workBudget(ctx.database).pruneBatch;
    const total = batch * 2 + 7;
    const items = Array.from({ length: total }, () => ({ accountId: tenant.accountId, type: 'device.status' as const, data: {} }));
    await ctx.database.transaction((tx) => appendEvents(tx, items));
    await ctx.database.query(`UPDATE events SET created_at = now() - interval '60 days' WHERE account_id = $1`, [tenant.accountId]);
    const first = await housekeeping.pruneOnce();
    expect(first.events).toBeGreaterThan(0);
    expect(first.events).toBeLessThanOrEqual(batch);
    let rounds = 1;
    while ((await seqsOf(tenant)).length > 0) {
      expect((await housekeeping.pruneOnce()).events).toBeLessThanOrEqual(batch);
      rounds++;
      expect(rounds).toBeLessThan(10);
    }
    expect(rounds).toBeGreaterThanOrEqual(3);
  });
});
