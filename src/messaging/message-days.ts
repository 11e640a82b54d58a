/**
 * The daily counts behind GET /account/overview: per account, UTC day and device, how many
 * messages reached SENT, DELIVERED, READ and FAILED and how many came in; per account, day and
 * error code, how many failed. They are added by the very statements that write those outcomes
 * (outcomes.ts, storeIncoming), as one more CTE, so they commit with the outcome, cost no extra
 * round trip, and the overview sums a few hundred rows whatever the number of messages.
 *
 * Invariants:
 * - An outcome is counted on the UTC day the server records it (the transaction's now()), once:
 *   the counts are the same transitions the bulk jobs count (a READ receipt that overtakes
 *   DELIVERED counts as delivered and read; one that overtakes SENT also as sent).
 * - The rows are locked only after the account row (`after` names a CTE that locks it: the
 *   events' seq bump), so writers of one account queue on the account and never deadlock here.
 */
import type { Queryable } from '../platform/database.js';

/** SQL: the UTC day an outcome written now is counted on. */
const TODAY_SQL = `(now() AT TIME ZONE 'UTC')::date`;

/**
 * SQL (a CTE body): adds the rows of `source` (account_id, device_id, sent, delivered, read,
 * failed, incoming: counts, any number of rows per account and device) to today's counts.
 */
export const COUNT_INTO_DAYS_SQL = (source: string, after: string): string => `
  INSERT INTO message_days AS d (account_id, day, device_id, sent, delivered, read, failed, incoming)
  SELECT account_id, ${TODAY_SQL}, device_id, sum(sent)::int, sum(delivered)::int, sum(read)::int, sum(failed)::int, sum(incoming)::int
    FROM ${source} WHERE (SELECT count(*) FROM ${after}) >= 0
   GROUP BY account_id, device_id
  HAVING sum(sent) + sum(delivered) + sum(read) + sum(failed) + sum(incoming) > 0
   ORDER BY account_id, device_id
  ON CONFLICT (account_id, day, device_id) DO UPDATE
     SET sent = d.sent + EXCLUDED.sent, delivered = d.delivered + EXCLUDED.delivered, read = d.read + EXCLUDED.read,
         failed = d.failed + EXCLUDED.failed, incoming = d.incoming + EXCLUDED.incoming
  RETURNING 1`;

/** SQL (a CTE body): adds one failure per row of `source` (account_id, error_code) to today's failures by code. */
export const COUNT_FAILURES_SQL = (source: string, after: string): string => `
  INSERT INTO message_day_failures AS d (account_id, day, error_code, failed)
  SELECT account_id, ${TODAY_SQL}, COALESCE(error_code, 'UNKNOWN'), count(*)::int
    FROM ${source} WHERE (SELECT count(*) FROM ${after}) >= 0
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT (account_id, day, error_code) DO UPDATE SET failed = d.failed + EXCLUDED.failed
  RETURNING 1`;

export interface DayCounts {
  /** YYYY-MM-DD (UTC). */
  day: string;
  sent: number;
  delivered: number;
  read: number;
  failed: number;
  incoming: number;
}

/** The account's counts per day from `from` (a UTC date, YYYY-MM-DD) to today, days without any left out. */
export async function readDays(db: Queryable, accountId: string, from: string): Promise<DayCounts[]> {
  return db.query<DayCounts>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(read)::int AS read,
            sum(failed)::int AS failed, sum(incoming)::int AS incoming
       FROM message_days WHERE account_id = $1 AND day >= $2::date
      GROUP BY day ORDER BY day`,
    [accountId, from],
  );
}

/** Each device's totals since `from`. */
export async function readDeviceTotals(db: Queryable, accountId: string, from: string): Promise<Array<Omit<DayCounts, 'day'> & { deviceId: string }>> {
  return db.query(
    `SELECT device_id AS "deviceId", sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(read)::int AS read,
            sum(failed)::int AS failed, sum(incoming)::int AS incoming
       FROM message_days WHERE account_id = $1 AND day >= $2::date
      GROUP BY device_id`,
    [accountId, from],
  );
}

/** Failures by error code since `from`, most frequent first. */
export async function readFailures(db: Queryable, accountId: string, from: string): Promise<Array<{ code: string; count: number }>> {
  return db.query(
    `SELECT error_code AS code, sum(failed)::int AS count FROM message_day_failures
      WHERE account_id = $1 AND day >= $2::date
      GROUP BY error_code ORDER BY count DESC, code`,
    [accountId, from],
  );
}

/** Today's UTC date as the database sees it (the day the counts are written under). */
export async function today(db: Queryable): Promise<string> {
  const [row] = await db.query<{ day: string }>(`SELECT to_char(${TODAY_SQL}, 'YYYY-MM-DD') AS day`);
  return row!.day;
}
