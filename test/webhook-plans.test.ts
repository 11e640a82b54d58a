/**
 * The webhook worker's claim of due deliveries, and its record of their outcomes, read the
 * deliveries they take and no others on the statistics of a delivery log analysed with pages and
 * no rows (pruned, then autovacuum), when the planner takes webhook_deliveries for one row however
 * many it holds, and a backlog then arrives (a new endpoint, a replay). Each statement's rows read
 * of each table, pages and plan rows are counted (plan-cost.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue, recordOutcomes, type OutcomeRecord } from '../src/events/webhook-store.js';
import { createTenant, createTestApp, json, type Tenant, type TestContext } from './helpers.js';
import { explaining } from './plan-cost.js';

const BACKLOG = 20_000;
const TAKEN = 200;
const WORKER = 'worker-wplan';

let ctx: TestContext;
let tenant: Tenant;
let endpointId: string;

/** `count` events of the tenant, each with a delivery to the endpoint in `status`, due a minute ago. */
async function addDeliveries(prefix: string, count: number, status: string): Promise<void> {
  await ctx.database.query(
    `WITH e AS (
       INSERT INTO events (id, account_id, seq, type, data)
       SELECT 'evt_' || $2 || lpad(g::text, 6, '0'), $1, g + (SELECT COALESCE(max(seq), 0) FROM events WHERE account_id = $1), 'webhook.test', '{}'::jsonb
         FROM generate_series(1, $3::int) AS g
       RETURNING id)
     INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, status, attempts, next_attempt_at)
     SELECT 'whd_' || substr(e.id, 5), $1, $4, e.id, $5, 0, now() - interval '1 minute' FROM e`,
    [tenant.accountId, prefix, count, endpointId, status],
  );
}

beforeAll(async () => {
  ctx = await createTestApp();
  tenant = await createTenant(ctx);
  // No worker runs here, so nothing delivers meanwhile.
  const created = await ctx.app.inject({ method: 'POST', url: '/webhooks', headers: tenant.headers, payload: { url: 'https://1.1.1.1/hooks/plans' } });
  expect(created.statusCode, created.body).toBe(201);
  endpointId = json<{ data: { id: string } }>(created).data.id;
  // Statistics of a delivery log that had rows and has none: its pages are still there.
  await addDeliveries('wplan_gone_', BACKLOG, 'SUCCEEDED');
  await ctx.database.query(`DELETE FROM webhook_deliveries WHERE id LIKE 'whd_wplan_gone_%'`);
  await ctx.database.query('ANALYZE webhook_deliveries');
  await addDeliveries('wplan_', BACKLOG, 'PENDING');
}, 60_000);
afterAll(async () => ctx.close());

/** A first attempt of delivery `row` (as claimed) that succeeded at `attemptedAt`. */
function succeeded(row: { id: string; address: string }, attemptedAt = new Date()): OutcomeRecord {
  return { id: row.id, address: row.address, status: 'SUCCEEDED', attempts: 1, nextAttemptAt: null, statusCode: 200, error: null, latencyMs: 5, excerpt: null, attemptedAt, gone: null };
}

async function count(where: string): Promise<number> {
  const [row] = await ctx.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE ${where}`, [WORKER]);
  return row!.n;
}

describe('webhook deliveries under an emptied table’s statistics', () => {
  // In order: the outcomes are those of the deliveries claimed.
  it('claims a backlog’s oldest reading only the deliveries it claims', async () => {
    const explained = explaining(ctx.database);
    await claimDue(explained, { workerId: WORKER, limit: TAKEN, perEndpoint: TAKEN, inFlight: new Map(), leaseMs: 60_000 });
    const { cost } = explained;
    expect(await count('claimed_by = $1')).toBe(TAKEN);
    // The walk of the endpoint's due deliveries stops at the 200 it locks, the update finds them
    // at their addresses (400 rows of webhook_deliveries read, 3,602 plan rows), and each one's
    // event and endpoint is a key look-up. Joined by id, the update read the whole table for
    // every claim: 20,000 more rows (43,402 plan rows).
    expect(cost.scanned.webhook_deliveries, 'deliveries read').toBeLessThan(TAKEN * 5);
    expect(cost.scanned.events, 'events read').toBeLessThan(TAKEN * 2);
    expect(cost.rows, 'plan rows').toBeLessThan(TAKEN * 50);
    expect(cost.pages, 'pages').toBeLessThan(TAKEN * 100);
  });

  it('records their outcomes reading only those deliveries', async () => {
    const claimed = await ctx.database.query<{ id: string; address: string }>('SELECT id, ctid::text AS address FROM webhook_deliveries WHERE claimed_by = $1', [WORKER]);
    const at = new Date();
    const explained = explaining(ctx.database);
    await recordOutcomes(explained, WORKER, claimed.map((row) => succeeded(row, at)));
    const { cost } = explained;
    expect(await count(`status = 'SUCCEEDED' AND id LIKE 'whd_wplan_%' AND $1 <> ''`)).toBe(TAKEN);
    // The 200 deliveries read at their addresses. Joined by id, the update read the whole table:
    // 20,000 rows. (Matching the 200 rows read with the 200 outcomes is done in memory, a join
    // the plan rows count: 83,017 of them.)
    expect(cost.scanned.webhook_deliveries, 'deliveries read').toBeLessThan(TAKEN * 5);
    expect(cost.pages, 'pages').toBeLessThan(TAKEN * 100);
  });

  it('an outcome recorded after its claim was lost to another worker changes nothing', async () => {
    const claimAs = async (workerId: string) => {
      const [row] = await claimDue(ctx.database, { workerId, limit: 1, perEndpoint: 1, inFlight: new Map(), leaseMs: 60_000 });
      return row!;
    };
    const first = await claimAs('worker-wplan-a');
    // Its lease runs out, and another worker claims the delivery (the row moves); due before the
    // backlog, so it is the one claimed next.
    await ctx.database.query(
      `UPDATE webhook_deliveries SET claimed_until = now() - interval '1 second', next_attempt_at = now() - interval '1 hour' WHERE id = $1`,
      [first.id],
    );
    const second = await claimAs('worker-wplan-b');
    expect(second.id).toBe(first.id);
    expect(second.address).not.toBe(first.address);
    const state = async () => (await ctx.database.query<{ status: string; claimed_by: string | null; attempts: number }>('SELECT status, claimed_by, attempts FROM webhook_deliveries WHERE id = $1', [first.id]))[0];
    await recordOutcomes(ctx.database, 'worker-wplan-a', [succeeded(first)]);
    expect(await state()).toEqual({ status: 'PENDING', claimed_by: 'worker-wplan-b', attempts: 0 });
    await recordOutcomes(ctx.database, 'worker-wplan-b', [succeeded(second)]);
    expect(await state()).toEqual({ status: 'SUCCEEDED', claimed_by: null, attempts: 1 });
  });
});
