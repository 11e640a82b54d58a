/**
 * Message quota of the plan's current period. A message counts when accepted (one per
 * recipient) and is refunded when it ends FAILED or CANCELLED, in the period it was counted in.
 */
import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { currentPeriod, type PlanPeriod } from './plans.js';

/** Reserves `count` messages in the account's current period, or throws 402 QUOTA_EXCEEDED. Call inside the accepting transaction. */
export async function reserveQuota(tx: Queryable, accountId: string, count: number, now: Date = new Date()): Promise<Date> {
  const [account] = await tx.query<{ plan_started_at: Date; message_quota: number | null; period: PlanPeriod }>(
    'SELECT a.plan_started_at, p.message_quota, p.period FROM accounts a JOIN plans p ON p.id = a.plan_id WHERE a.id = $1',
    [accountId],
  );
  if (!account) throw new AppError('NOT_FOUND', 'Account not found');
  const period = currentPeriod(account.plan_started_at, account.period, now);
  const [row] = await tx.query<{ messages_used: number }>(
    `INSERT INTO usage_periods (account_id, period_start, messages_used) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, period_start) DO UPDATE SET messages_used = usage_periods.messages_used + EXCLUDED.messages_used
     RETURNING messages_used`,
    [accountId, period.start, count],
  );
  const used = row!.messages_used;
  if (account.message_quota !== null && used > account.message_quota) {
    const before = used - count;
    throw new AppError(
      'QUOTA_EXCEEDED',
      `This send needs ${count} message${count === 1 ? '' : 's'} but only ${Math.max(0, account.message_quota - before)} of the plan's ${account.message_quota} remain until ${period.end.toISOString()}`,
      { limit: account.message_quota, used: before, requested: count, resetsAt: period.end.toISOString() },
    );
  }
  return period.start;
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
    `UPDATE usage_periods u SET messages_used = GREATEST(0, u.messages_used - r.n)
       FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS r(account_id, period_start, n)
      WHERE u.account_id = r.account_id AND u.period_start = r.period_start`,
    [list.map((r) => r.accountId), list.map((r) => r.periodStart), list.map((r) => r.count)],
  );
}
