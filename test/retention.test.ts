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
import { randomBytes } from 'node:crypto';
import { firstIdAt } from '../src/platform/ids.js';

describe('retention of events, delivery attempts and message bodies', () => {
  let ctx: TestContext;
  let housekeeping: Housekeeping;

  beforeAll(async () => {
    ctx = await createTestApp({ EVENT_RETENTION_DAYS: '30', WEBHOOK_ATTEMPT_RETENTION_DAYS: '7', MESSAGE_BODY_RETENTION_DAYS: '90' });
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

  const DAY = 86_400_000;
  /** A message id created `days` ago (ids are time-ordered), unique. */
  const idAged = (days: number): string => firstIdAt('msg', new Date(Date.now() - days * DAY)).slice(0, -16) + randomBytes(8).toString('hex');
  const device = async (tenant: Tenant): Promise<string> => {
    const id = `dev_${randomBytes(8).toString('hex')}`;
    await ctx.database.query(`INSERT INTO devices (id, account_id, name, status) VALUES ($1, $2, 'phone', 'CONNECTED')`, [id, tenant.accountId]);
    return id;
  };
  interface Seed { days: number; status: string; direction?: string; type?: string; content?: string; mediaUrl?: string | null; payload?: unknown; media?: unknown; mentions?: string[] | null }
  const seed = async (tenant: Tenant, deviceId: string, rows: Seed[]): Promise<string[]> => {
    const ids: string[] = [];
    for (const row of rows) {
      const id = idAged(row.days);
      ids.push(id);
      await ctx.database.query(
        `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, media_url, payload, media, mentions, status, network_message_id, created_at)
         VALUES ($1, $2, $3, $4, '6281234567890', $5, $6, $7, $8, $9, $10, $11, $1, now() - $12::int * interval '1 day')`,
        [id, tenant.accountId, deviceId, row.direction ?? 'out', row.type ?? 'TEXT', row.content ?? 'a body', row.mediaUrl ?? null,
          row.payload === undefined ? null : JSON.stringify(row.payload), row.media === undefined ? null : JSON.stringify(row.media), row.mentions ?? null, row.status, row.days],
      );
    }
    return ids;
  };
  const bodies = (ids: string[]) =>
    ctx.database.query<{ id: string; status: string; content: string; media_url: string | null; payload: unknown; media: unknown; mentions: string[] | null }>(
      'SELECT id, status, content, media_url, payload, media, mentions FROM messages WHERE id = ANY($1::text[]) ORDER BY id', [ids]);

  it('clears the bodies of settled messages past MESSAGE_BODY_RETENTION_DAYS and keeps everything else about them', async () => {
    const tenant = await createTenant(ctx);
    const other = await createTenant(ctx);
    const dev = await device(tenant);
    const old = await seed(tenant, dev, [
      { days: 120, status: 'READ', type: 'IMAGE', content: 'a caption', mediaUrl: 'https://example.test/a.png', mentions: ['6281234567891'] },
      { days: 110, status: 'FAILED' },
      { days: 105, status: 'RECEIVED', direction: 'in', type: 'LOCATION', content: '', payload: { location: { latitude: 1, longitude: 2 } }, media: { mimeType: 'image/jpeg' } },
      { days: 100, status: 'SENT', type: 'POLL', content: 'Lunch?', payload: { poll: { options: ['a', 'b'] } } },
    ]);
    const waiting = await seed(tenant, dev, [{ days: 100, status: 'SCHEDULED', content: 'far ahead' }]);
    const recent = await seed(tenant, dev, [{ days: 10, status: 'DELIVERED', content: 'recent' }]);
    const othersOld = await seed(other, await device(other), [{ days: 100, status: 'CANCELLED', content: 'theirs' }]);

    const pruned = await housekeeping.pruneOnce();
    expect(pruned.messageBodies).toBe(old.length + othersOld.length);
    for (const row of await bodies([...old, ...othersOld])) {
      expect(row).toMatchObject({ content: '', media_url: null, payload: null, media: null, mentions: null });
    }
    expect((await bodies(old)).map((r) => r.status)).toEqual(['READ', 'FAILED', 'RECEIVED', 'SENT']);
    expect((await bodies(waiting))[0]).toMatchObject({ status: 'SCHEDULED', content: 'far ahead' });
    expect((await bodies(recent))[0]).toMatchObject({ status: 'DELIVERED', content: 'recent' });

    // The API still lists and shows the message, with the body gone.
    const shown = await call(ctx, tenant, 'GET', `/messages/${old[0]!}`);
    expect(shown.statusCode).toBe(200);
    expect(shown.json<{ data: { status: string; content: string; mediaUrl: string | null } }>().data).toMatchObject({ status: 'READ', content: '', mediaUrl: null });
    expect((await call(ctx, tenant, 'GET', '/messages?limit=100')).json<{ meta: { total: number } }>().meta.total).toBe(6);

    // The sweep's mark moved past them: the next pass reads nothing it has read.
    expect(await housekeeping.pruneOnce()).toMatchObject({ messageBodies: 0 });
  });

  it('takes a backlog of old message bodies one bounded batch per statement, never past the cutoff', async () => {
    const tenant = await createTenant(ctx);
    const dev = await device(tenant);
    const batch = workBudget(ctx.database).pruneBatch;
    const total = batch * 2 + 5;
    const ids = Array.from({ length: total }, () => idAged(95));
    await ctx.database.query(
      `INSERT INTO messages (id, account_id, device_id, peer, type, content, status, network_message_id, created_at)
       SELECT id, $2, $3, '6281234567890', 'TEXT', 'old body', 'SENT', id, now() - interval '95 days' FROM unnest($1::text[]) AS id`,
      [ids, tenant.accountId, dev],
    );
    const keep = await seed(tenant, dev, [{ days: 89, status: 'SENT', content: 'inside the window' }]);
    let rounds = 0;
    let cleared = 0;
    for (;;) {
      const pass = await housekeeping.pruneOnce();
      expect(pass.messageBodies).toBeLessThanOrEqual(batch);
      cleared += pass.messageBodies;
      rounds++;
      if (!pass.full) break;
      expect(rounds).toBeLessThan(10);
    }
    expect(cleared).toBe(total);
    expect(rounds).toBeGreaterThanOrEqual(3);
    const [left] = await ctx.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::text[]) AND content <> ''`, [ids]);
    expect(left!.n).toBe(0);
    expect((await bodies(keep))[0]!.content).toBe('inside the window');
  });
});
