/**
 * Message quota of the plan's current period. A message counts when accepted (one per
 * recipient) and is refunded when it ends FAILED or CANCELLED, in the period it was counted in.
 */
import type { Queryable } from '../platform/database.js';
import { AppError } from '../platform/errors.js';

/**
 * The SQL that reserves $n messages for account $1 in the period of `a` (a CTE with quota and
 * period_start): with a quota, in shard 0, only if the sum over every shard stays within it;
 * without one, in the shard of the database connection (1-63), so concurrent sends on different
 * connections never wait for each other's row lock (held until commit, i.e. through the WAL flush;
 * random shards still collided, and commits then queued one flush after another). Returns a row (period_start) only when the reservation holds.
 * `alsoFrom` (e.g. ', d') adds CTEs that must have a row for anything to be reserved.
 */
export const RESERVE_SQL = (accountParam: string, countParam: string, alsoFrom = ''): string => `
  INSERT INTO usage_periods AS u (account_id, period_start, shard, messages_used)
  SELECT ${accountParam}, a.period_start, CASE WHEN a.quota IS NULL THEN 1 + pg_backend_pid() % 63 ELSE 0 END, ${countParam}
    FROM a${alsoFrom}
   WHERE a.quota IS NULL
      OR ${countParam} + COALESCE((SELECT sum(messages_used) FROM usage_periods
                                    WHERE account_id = ${accountParam} AND period_start = a.period_start AND shard <> 0), 0) <= a.quota
  ON CONFLICT (account_id, period_start, shard) DO UPDATE SET messages_used = u.messages_used + EXCLUDED.messages_used
   WHERE (SELECT quota FROM a) IS NULL
      OR u.messages_used + EXCLUDED.messages_used
         + COALESCE((SELECT sum(messages_used) FROM usage_periods
                      WHERE account_id = u.account_id AND period_start = u.period_start AND shard <> 0), 0) <= (SELECT quota FROM a)
  RETURNING u.period_start`;

/** The account's plan quota and current period, as the CTE `a` that RESERVE_SQL reads. */
export const PERIOD_CTE_SQL = (accountParam: string, atParam: string): string => `
  SELECT p.message_quota AS quota, w.period_start, w.period_end
    FROM accounts a JOIN plans p ON p.id = a.plan_id, waygate_period(a.plan_started_at, p.period, ${atParam}) AS w
   WHERE a.id = ${accountParam}`;

/** Reserves `count` messages in the account's current period, or throws 402 QUOTA_EXCEEDED. */
export async function reserveQuota(tx: Queryable, accountId: string, count: number, now: Date = new Date()): Promise<Date> {
  const [row] = await tx.query<{ period_start: Date; period_end: Date; quota: number | null; reserved: Date | null }>(
    `WITH a AS (${PERIOD_CTE_SQL('$1', '$3')}), u AS (${RESERVE_SQL('$1', '$2::int')})
     SELECT a.period_start, a.period_end, a.quota, (SELECT period_start FROM u) AS reserved FROM a`,
    [accountId, count, now],
  );
  if (!row) throw new AppError('NOT_FOUND', 'Account not found');
  if (row.reserved === null) throw await quotaExceeded(tx, accountId, count, row);
  return row.period_start;
}

/** The 402 for a send that does not fit, with what is left in the period. */
export async function quotaExceeded(
  tx: Queryable,
  accountId: string,
  count: number,
  period: { period_start: Date; period_end: Date; quota: number | null },
): Promise<AppError> {
  const [usage] = await tx.query<{ used: number }>(
    'SELECT COALESCE(sum(messages_used), 0)::int AS used FROM usage_periods WHERE account_id = $1 AND period_start = $2',
    [accountId, period.period_start],
  );
  const used = usage?.used ?? 0;
  const limit = period.quota ?? 0;
  return new AppError(
    'QUOTA_EXCEEDED',
    `This send needs ${count} message${count === 1 ? '' : 's'} but only ${Math.max(0, limit - used)} of the plan's ${limit} remain until ${period.period_end.toISOString()}`,
    { limit, used, requested: count, resetsAt: period.period_end.toISOString() },
  );
}

/** Gives back messages that ended FAILED or CANCELLED. `rows` may hold many accounts and periods. */
export async function refundQuota(tx: Queryable, rows: { accountId: string; periodStart: Date | null; count: number }[]): Promise<void> {
  const merged = new Map<string, { accountId: string; periodStart: Date; count: number }>();
  for (const row of rows) {
    if (!row.periodStart || row.count <= 0) continue;
    const key = `${row.accountId}|${row.periodStart.toISOString()}`;
    const entry = merged.get(key) ?? { accountId: row.accountId, periodStart: row.periodStart, count: 0 };
    entry.count += row.count;
    merged.set(key, entry);
  }
  if (merged.size === 0) return;
  const list = [...merged.values()];
  await tx.query(
    // Refunds go to shard 0; the sum over the shards is what counts. Shard 0 may not exist yet (an
    // account without a quota counts in its connections' shards), so it is created, negative if need be.
    `INSERT INTO usage_periods AS u (account_id, period_start, shard, messages_used)
     SELECT r.account_id, r.period_start, 0, -r.n FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS r(account_id, period_start, n)
     ON CONFLICT (account_id, period_start, shard) DO UPDATE SET messages_used = u.messages_used + EXCLUDED.messages_used`,
    [list.map((r) => r.accountId), list.map((r) => r.periodStart), list.map((r) => r.count)],
  );
}
