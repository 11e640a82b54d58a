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
 * Runs `hold` (a statement on one row, with `params`) in a transaction left open while `run`
 * starts; once something waits for that transaction, runs `whileWaiting`, commits, and returns
 * `run`'s result.
 */
async function whileHolding<T>(pool: pg.Pool, hold: string, params: unknown[], run: () => Promise<T>, whileWaiting: () => Promise<void> = async () => undefined): Promise<T> {
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(hold, params);
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const result = run();
    result.catch(() => undefined);
    await blockedBy(pool, pid);
    await whileWaiting();
    await holder.query('COMMIT');
    return await result;
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
}

/**
 * Holds `rows.held` of `table` FOR UPDATE while `run` starts; once something waits for it, checks
 * with NOWAIT that nobody holds `rows.other`; then lets `run` finish and returns its result.
 */
export function whileRowHeld<T>(pool: pg.Pool, table: 'messages' | 'bulk_jobs', rows: { held: string; other: string }, run: () => Promise<T>): Promise<T> {
  return whileHolding(pool, `SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [rows.held], run, async () => {
    const prober = await pool.connect();
    try {
      await prober.query('BEGIN');
      await prober.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE NOWAIT`, [rows.other]);
    } finally {
      await prober.query('ROLLBACK').catch(() => undefined);
      prober.release();
    }
  });
}

/**
 * Changes row `id` of `table` (SET `set`) in a transaction left open while `run` starts; once
 * something waits for it, commits the change and returns `run`'s result. The waiting statement's
 * snapshot was taken before the change committed, so the newest version it then locks is one its
 * snapshot cannot see.
 */
export function whileRowChanged<T>(pool: pg.Pool, table: 'messages' | 'bulk_jobs', id: string, set: string, run: () => Promise<T>): Promise<T> {
  return whileHolding(pool, `UPDATE ${table} SET ${set} WHERE id = $1`, [id], run);
}
