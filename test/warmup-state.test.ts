/** warmupState: where a newly linked WhatsApp number stands in its warm-up, as GET /account/overview shows it. */
import { describe, expect, it } from 'vitest';
import { warmupState } from '../src/network/whatsapp/warmup.js';

const DAY = 24 * 60 * 60 * 1000;
const linked = new Date('2026-11-20T08:00:00Z');
const caps = [50, 100, 200];
const row = (over: Partial<Parameters<typeof warmupState>[0]> = {}) => ({ first_linked_at: linked, warmup_day: 0, warmup_sent: 0, bulk_paused_until: null, ...over });

describe('warmupState', () => {
  it('is day 1 of 3 with the first cap and what was sent that day', () => {
    expect(warmupState(row({ warmup_sent: 12 }), caps, linked.getTime() + 3_600_000)).toEqual({
      day: 1,
      days: 3,
      dailyCap: 50,
      sentToday: 12,
      endsAt: new Date(linked.getTime() + 3 * DAY),
      bulkPausedUntil: null,
    });
  });

  it('counts nothing sent on a day the stored count is not for', () => {
    expect(warmupState(row({ warmup_day: 0, warmup_sent: 40 }), caps, linked.getTime() + DAY + 1000)).toMatchObject({ day: 2, dailyCap: 100, sentToday: 0 });
  });

  it('is null after the last day, or before the first link, or with the warm-up off', () => {
    expect(warmupState(row(), caps, linked.getTime() + 3 * DAY)).toBeNull();
    expect(warmupState(row({ first_linked_at: null }), caps, Date.now())).toBeNull();
    expect(warmupState(row(), [], linked.getTime() + 1000)).toBeNull();
  });

  it('shows a bulk pause still ahead, also after the warm-up', () => {
    const now = linked.getTime() + 5 * DAY;
    const until = new Date(now + 60_000);
    expect(warmupState(row({ bulk_paused_until: until }), caps, now)).toMatchObject({ day: null, dailyCap: null, bulkPausedUntil: until });
    expect(warmupState(row({ bulk_paused_until: new Date(now - 1) }), caps, now)).toBeNull();
  });
});
