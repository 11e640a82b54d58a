/**
 * How long to wait before trying again. A retry that must outlive the process is stored with its
 * time (a message's or a network errand's `due_at`, a webhook delivery's `next_attempt_at`, whose
 * schedule is WEBHOOK_RETRY_SCHEDULE); a session's reconnection is a timer of the live session.
 * So these only compute delays: nothing here holds a retry, which is why no retry library's loop
 * (p-retry and the like keep the attempt in memory) fits.
 */

/** The waits between attempts to connect (a device reconnecting, a WhatsApp session linking). */
export const CONNECT_BACKOFF_MS: readonly number[] = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000];

/** The wait after the `failures`-th failure in a row (1 for the first) along `schedule`, whose last entry repeats. */
export function alongSchedule(schedule: readonly number[], failures: number): number {
  return schedule[Math.min(Math.max(failures, 1), schedule.length) - 1]!;
}

/** `firstMs` after the first attempt, doubling with each further one, at most `capMs`. */
export function doubling(attempt: number, firstMs: number, capMs: number): number {
  return Math.min(capMs, firstMs * 2 ** Math.max(0, attempt - 1));
}

/** `ms` spread evenly over ±`spread` of itself (0.2: ±20%), so that what failed together does not come back together. */
export function jittered(ms: number, spread = 0.2): number {
  return Math.round(ms * (1 - spread + Math.random() * 2 * spread));
}
