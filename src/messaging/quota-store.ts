/**
 * The message quota of a plan's current period (usage_periods). A message counts when accepted
 * (one per recipient) and is refunded when it ends FAILED or CANCELLED, in the period it was
 * counted in. Every statement on usage_periods is here; statements of other stores compose
 * RESERVE_SQL and REFUND_SQL into their own, so there is one reservation rule and one refund rule.
 */
import type { Queryable } from '../platform/database.js';
import type { MessageType } from '../network/network.js';
import { AppError } from '../platform/errors.js';

/**
 * Counting shards of an account without a quota: 1..SHARDS, by database connection, so
 * concurrent sends on different connections never wait for each other's row lock (held until
 * commit). An account with a quota counts in shard 0, where the check is atomic; refunds always go
 * to shard 0. What counts is the sum over every shard.
 */
const SHARDS = 63;

/**
 * SQL: the plan quota and current period at `at` (account_id, quota, period_start, period_end)
 * of the accounts whose id (`ac.id`) meets `accountCondition`.
 */
export const PERIODS_SQL = (accountCondition: string, at: string): string => `
  SELECT ac.id AS account_id, p.message_quota AS quota, w.period_start, w.period_end
    FROM accounts ac JOIN plans p ON p.id = ac.plan_id, waygate_period(ac.plan_started_at, p.period, ${at}) AS w
   WHERE ${accountCondition}`;

/** SQL: messages already counted in the numbered shards of an account's period. */
const usedInShards = (account: string, periodStart: string): string =>
  `COALESCE((SELECT sum(x.messages_used) FROM usage_periods x WHERE x.account_id = ${account} AND x.period_start = ${periodStart} AND x.shard <> 0), 0)`;

/**
 * SQL (a data-modifying CTE body): reserves, for each row (account_id, n) of CTE `need`, n
 * messages in the period its account has in CTE `periods` (PERIODS_SQL). With a quota it holds
 * only if the sum over every shard stays within it. Returns (account_id, period_start) for each
 * reservation that held, nothing for one that did not.
 */
export const RESERVE_SQL = (need: string, periods: string): string => `
  INSERT INTO usage_periods AS u (account_id, period_start, shard, messages_used)
  SELECT nd.account_id, pd.period_start, CASE WHEN pd.quota IS NULL THEN 1 + pg_backend_pid() % ${SHARDS} ELSE 0 END, nd.n
    FROM ${need} nd JOIN ${periods} pd ON pd.account_id = nd.account_id
   WHERE pd.quota IS NULL OR nd.n + ${usedInShards('nd.account_id', 'pd.period_start')} <= pd.quota
  ON CONFLICT (account_id, period_start, shard) DO UPDATE SET messages_used = u.messages_used + EXCLUDED.messages_used
   WHERE (SELECT quota FROM ${periods} pd WHERE pd.account_id = u.account_id) IS NULL
      OR u.messages_used + EXCLUDED.messages_used + ${usedInShards('u.account_id', 'u.period_start')}
         <= (SELECT quota FROM ${periods} pd WHERE pd.account_id = u.account_id)
  RETURNING u.account_id, u.period_start`;

/**
 * SQL (a data-modifying CTE body): gives back, for each row (account_id, period_start, n) of
 * `source` (a table expression), n messages. Rows without a period (never counted) are skipped.
 * Refunds go to shard 0, created (negative if need be) when the account counted only in the others.
 */
export const REFUND_SQL = (source: string): string => `
  INSERT INTO usage_periods AS u (account_id, period_start, shard, messages_used)
  SELECT rf.account_id, rf.period_start, 0, -sum(rf.n) FROM ${source} rf
   WHERE rf.period_start IS NOT NULL AND rf.n > 0 GROUP BY rf.account_id, rf.period_start
  ON CONFLICT (account_id, period_start, shard) DO UPDATE SET messages_used = u.messages_used + EXCLUDED.messages_used
  RETURNING 1`;

/**
 * The one exemption from the plan's quota: a REACTION is not a message the plan counts (it is
 * neither reserved nor, when it fails, refunded). Every other message counts one per recipient.
 */
export const countsAgainstQuota = (type: MessageType): boolean => type !== 'REACTION';

export interface Period {
  period_start: Date;
  period_end: Date;
  quota: number | null;
}

/** Reserves `count` messages in the account's current period, or throws 402 QUOTA_EXCEEDED. */
export async function reserveQuota(tx: Queryable, accountId: string, count: number, now: Date = new Date()): Promise<Date> {
  const [row] = await tx.query<Period & { reserved: Date | null }>(
    `WITH a AS (${PERIODS_SQL('ac.id = $1', '$3')}), need AS (SELECT $1::text AS account_id, $2::int AS n), u AS (${RESERVE_SQL('need', 'a')})
     SELECT a.period_start, a.period_end, a.quota, (SELECT period_start FROM u) AS reserved FROM a`,
    [accountId, count, now],
  );
  if (!row) throw new AppError('NOT_FOUND', 'Account not found');
  if (row.reserved === null) throw await quotaExceeded(tx, accountId, count, row);
  return row.period_start;
}

/** SQL: the messages counted in an account's period (every shard, refunds included). */
export const USED_IN_PERIOD_SQL = (account: string, periodStart: string): string =>
  `(SELECT COALESCE(sum(messages_used), 0)::int FROM usage_periods WHERE account_id = ${account} AND period_start = ${periodStart})`;

/** Messages counted in the account's period. */
async function usedInPeriod(db: Queryable, accountId: string, periodStart: Date): Promise<number> {
  const [usage] = await db.query<{ used: number }>(`SELECT ${USED_IN_PERIOD_SQL('$1', '$2')} AS used`, [accountId, periodStart]);
  return usage?.used ?? 0;
}

/** The 402 for a send that does not fit, with what is left in the period. */
export async function quotaExceeded(db: Queryable, accountId: string, count: number, period: Period): Promise<AppError> {
  const used = await usedInPeriod(db, accountId, period.period_start);
  const limit = period.quota ?? 0;
  return new AppError(
    'QUOTA_EXCEEDED',
    `This send needs ${count} message${count === 1 ? '' : 's'} but only ${Math.max(0, limit - used)} of the plan's ${limit} remain until ${period.period_end.toISOString()}`,
    { limit, used, requested: count, resetsAt: period.period_end.toISOString() },
  );
}

/** Gives back messages that ended FAILED or CANCELLED, from Node. `rows` may hold many accounts and periods. */
export async function refundQuota(tx: Queryable, rows: { accountId: string; periodStart: Date | null; count: number }[]): Promise<void> {
  const list = rows.filter((r) => r.periodStart !== null && r.count > 0);
  if (list.length === 0) return;
  await tx.query(
    `WITH r AS (SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS r(account_id, period_start, n)), refunded AS (${REFUND_SQL('r')})
     SELECT count(*) FROM refunded`,
    [list.map((r) => r.accountId), list.map((r) => r.periodStart), list.map((r) => r.count)],
  );
}
