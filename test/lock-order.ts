/**
 * For the *-lock-order.pg.test.ts files: a statement that locks several rows in one order takes
 * none of them before the first. whileRowHeld holds one row FOR UPDATE while the statement
 * starts, waits until something waits for the holder, checks with NOWAIT that meanwhile nobody
 * holds the other row, then lets the statement finish and returns its result.
 */
import type pg from 'pg';

/** Waits until a backend waits for the backend `holderPid` (polled every 10 ms, for at most 10 s). */
async function blockedBy(pool: pg.Pool, holderPid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid]);
    if (rows[0]!.n > 0) return;
    if (Date.now() > deadline) throw new Error('the statement never waited for the held row');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function whileRowHeld<T>(pool: pg.Pool, table: 'messages' | 'bulk_jobs', rows: { held: string; other: string }, run: () => Promise<T>): Promise<T> {
  const holder = await pool.connect();
  const prober = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [rows.held]);
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const result = run();
    result.catch(() => undefined);
    await blockedBy(pool, pid);
    await prober.query('BEGIN');
    await prober.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE NOWAIT`, [rows.other]);
    await prober.query('ROLLBACK');
    await holder.query('COMMIT');
    return await result;
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await prober.query('ROLLBACK').catch(() => undefined);
    holder.release();
    prober.release();
  }
}
