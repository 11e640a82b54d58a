/** Plans are rows; this module only does the period arithmetic anchored on planStartedAt. */
export type PlanPeriod = 'month' | 'year';

export interface Plan {
  id: string;
  name: string;
  messageQuota: number | null;
  period: PlanPeriod;
  maxDevices: number | null;
  maxWebhooks: number | null;
}

/** Adds whole months in UTC, clamping to the month's last day (Jan 31 + 1 month = Feb 28/29). */
export function addMonthsClamped(anchor: Date, months: number): Date {
  const year = anchor.getUTCFullYear();
  const month = anchor.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(anchor.getUTCDate(), lastDay),
      anchor.getUTCHours(),
      anchor.getUTCMinutes(),
      anchor.getUTCSeconds(),
      anchor.getUTCMilliseconds(),
    ),
  );
}

/** The quota period containing `now` for a plan that started at `anchor`. */
export function currentPeriod(anchor: Date, period: PlanPeriod, now: Date = new Date()): { start: Date; end: Date } {
  const step = period === 'year' ? 12 : 1;
  if (now < anchor) return { start: anchor, end: addMonthsClamped(anchor, step) };
  const monthsApart =
    (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  let n = Math.max(0, Math.floor(monthsApart / step) - 1);
  // At most two steps forward from the estimate.
  while (addMonthsClamped(anchor, (n + 1) * step) <= now) n++;
  return { start: addMonthsClamped(anchor, n * step), end: addMonthsClamped(anchor, (n + 1) * step) };
}
