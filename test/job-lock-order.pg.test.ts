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

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

/** Waits until the backend `pid` waits on a lock (polled every 10 ms, for at most 10 s). */
async function blocked(pid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await ctx.database.pool!.query<{ n: number }>('SELECT cardinality(pg_blocking_pids($1))::int AS n', [pid]);
    if (rows[0]!.n > 0) return;
    if (Date.now() > deadline) throw new Error('the count never waited for the held job');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

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

    const holder = await pool.connect();
    const counter = await pool.connect();
    const prober = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM bulk_jobs WHERE id = $1 FOR UPDATE', [first]);
      const { rows } = await counter.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const counted = counter.query<{ n: number }>(count, [second, first]);
      await blocked(rows[0]!.pid);

      // While the count waits for `first`, it holds nothing on `second`.
      await prober.query('BEGIN');
      await prober.query('SELECT 1 FROM bulk_jobs WHERE id = $1 FOR UPDATE NOWAIT', [second]);
      await prober.query('ROLLBACK');

      await holder.query('COMMIT');
      expect((await counted).rows[0]!.n).toBe(2);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await prober.query('ROLLBACK').catch(() => undefined);
      holder.release();
      counter.release();
      prober.release();
    }
    const { rows } = await pool.query<{ id: string; sent_count: number }>('SELECT id, sent_count FROM bulk_jobs WHERE id = ANY($1::text[]) ORDER BY id', [[first, second]]);
    expect(rows).toEqual([
      { id: first, sent_count: 1 },
      { id: second, sent_count: 1 },
    ]);
  });
});
