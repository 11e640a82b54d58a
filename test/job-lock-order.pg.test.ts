/**
 * Statements that count messages into several bulk jobs at once (outcomes and receipts, from every
 * worker) lock the jobs in id order, on PostgreSQL. Before, an UPDATE … FROM locked them in its
 * join's order: two workers' outcome and receipt statements deadlocked on bulk_jobs rows, and an
 * outcome that lost the deadlock released its messages, which were then sent a second time
 * (bench/scale: 35 and 108 of 20,000 paced messages received twice). Files named *.pg.test.ts
 * run only in the PostgreSQL pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNT_INTO_JOBS_SQL } from '../src/messaging/job-store.js';
import { createTenant, createTestApp, json, type TestContext } from './helpers.js';
import { whileRowHeld } from './row-locks.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

describe('counting into bulk jobs on PostgreSQL', () => {
  it('locks the jobs in id order, whatever the order of its counts, so two counts never deadlock', async () => {
    const pool = ctx.database.pool!;
    const tenant = await createTenant(ctx);
    const device = json<{ data: { id: string } }>(await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name: 'Lock order' } })).data;
    const [first, second] = [`job_lock_${tenant.accountId}_a`, `job_lock_${tenant.accountId}_b`];
    // Written (so stored, and read by a scan) later job first, as the counts below name them.
    for (const id of [second, first]) {
      await pool.query(`INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, total_contacts) VALUES ($1, $2, $3, 'PROCESSING', 'TEXT', 'x', 100)`, [
        id,
        tenant.accountId,
        device.id,
      ]);
    }
    // The counts name the later job first: a statement that locked in its own order would take
    // `second` and then wait for `first`.
    const count = `WITH counts AS (SELECT * FROM (VALUES ($1, 1, 0, 1), ($2, 1, 0, 1)) AS v(job_id, sent, failed, n)),
      jobs AS (${COUNT_INTO_JOBS_SQL('counts', { sent_count: 'c.sent', failed_count: 'c.failed' }, 'c.n')})
      SELECT count(*)::int AS n FROM jobs`;

    // While the count waits for `first`, it holds nothing on `second`.
    const counted = await whileRowHeld(pool, 'bulk_jobs', { held: first, other: second }, () => pool.query<{ n: number }>(count, [second, first]));
    expect(counted.rows[0]!.n).toBe(2);
    const { rows } = await pool.query<{ id: string; sent_count: number }>('SELECT id, sent_count FROM bulk_jobs WHERE id = ANY($1::text[]) ORDER BY id', [[first, second]]);
    expect(rows).toEqual([
      { id: first, sent_count: 1 },
      { id: second, sent_count: 1 },
    ]);
  });
});
