/**
 * Row locks in PostgreSQL tests: blockedBy waits until a statement waits behind a transaction;
 * whileRowHeld shows that a statement locking several rows in one order takes none of them before
 * the first (the *-lock-order.pg.test.ts files).
 */
import type pg from 'pg';

/** Waits until a backend waits for the backend `holderPid` (polled every 10 ms, for at most 10 s). */
export async function blockedBy(pool: pg.Pool, holderPid: number, what = 'the statement never waited for the held row'): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid]);
    if (rows[0]!.n > 0) return;
    if (Date.now() > deadline) throw new Error(what);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Holds `rows.held` of `table` FOR UPDATE while `run` starts; once something waits for it, checks
 * with NOWAIT that nobody holds `rows.other`; then lets `run` finish and returns its result.
 */
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

/**
 * Changes row `id` of `table` (SET `set`) in a transaction left open while `run` starts; once
 * something waits for it, commits the change and returns `run`'s result. The waiting statement's
 * snapshot was taken before the change committed, so the newest version it then locks is one its
 * snapshot cannot see.
 */
export async function whileRowChanged<T>(pool: pg.Pool, table: 'messages' | 'bulk_jobs', id: string, set: string, run: () => Promise<T>): Promise<T> {
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`UPDATE ${table} SET ${set} WHERE id = $1`, [id]);
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const result = run();
    result.catch(() => undefined);
    await blockedBy(pool, pid);
    await holder.query('COMMIT');
    return await result;
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
}
