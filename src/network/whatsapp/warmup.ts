/**
 * Warm-up of a newly linked number: WhatsApp bans numbers that start sending in bulk right after
 * they appear, so a device may send at most caps[0] bulk messages in its first day, caps[1] in
 * its second, and so on (a day is 24 h counted from when the number was first linked on this
 * device); after the last entry there is no cap. Direct sends are never capped. The count lives
 * in whatsapp_devices, so a worker that takes the device over continues it.
 *
 * The same policy pauses the device's bulk traffic for a while when WhatsApp answers a send with
 * 463 (no privacy token towards a new contact: more first messages to strangers now is ban
 * pressure); the pause is kept in whatsapp_devices too.
 */
import type { Database } from '../../platform/database.js';
import type { BulkPolicy } from '../network.js';
import { WhatsAppStore, type WarmupRow } from './whatsapp-store.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Where a device stands in its warm-up, as the overview shows it (null: no cap and no pause now). */
export interface WarmupState {
  /** 1-based day of the warm-up; null when only a pause holds bulk traffic. */
  day: number | null;
  days: number;
  /** Bulk messages the device may send today; null when not warming up. */
  dailyCap: number | null;
  sentToday: number;
  endsAt: Date;
  bulkPausedUntil: Date | null;
}

/** The warm-up day (0-based) a number first linked at `firstLinkedAt` is on. */
const warmupDay = (firstLinkedAt: Date, now: number): number => Math.max(0, Math.floor((now - firstLinkedAt.getTime()) / DAY_MS));

/** The warm-up state of a whatsapp_devices row, under the configured daily caps. */
export function warmupState(row: WarmupRow, caps: readonly number[], now: number): WarmupState | null {
  const paused = row.bulk_paused_until && row.bulk_paused_until.getTime() > now ? row.bulk_paused_until : null;
  if (!row.first_linked_at) return null;
  const day = warmupDay(row.first_linked_at, now);
  const warming = day < caps.length;
  if (!warming && !paused) return null;
  return {
    day: warming ? day + 1 : null,
    days: caps.length,
    dailyCap: warming ? caps[day]! : null,
    sentToday: warming && row.warmup_day === day ? row.warmup_sent : 0,
    endsAt: new Date(row.first_linked_at.getTime() + caps.length * DAY_MS),
    bulkPausedUntil: paused,
  };
}

export class WarmupPolicy implements BulkPolicy {
  private firstLinkedAt: Date | null = null;
  private day = 0;
  private sent = 0;
  private pausedUntil: Date | null = null;

  private readonly store: WhatsAppStore;

  constructor(
    database: Database,
    deviceId: string,
    private readonly caps: number[],
    private readonly now: () => number = Date.now,
  ) {
    this.store = new WhatsAppStore(database, deviceId);
  }

  async load(): Promise<void> {
    const row = await this.store.warmup();
    if (!row) return;
    this.firstLinkedAt = row.first_linked_at;
    this.day = row.warmup_day;
    this.sent = row.warmup_sent;
    this.pausedUntil = row.bulk_paused_until;
  }

  /** Bulk traffic waits until `until` (a later pause extends it, an earlier one does not shorten it). */
  async pause(until: Date): Promise<void> {
    if (this.pausedUntil && this.pausedUntil >= until) return;
    this.pausedUntil = until;
    await this.store.pauseBulk(until);
  }

  /** The device is linked as `phoneNumber`: a number seen for the first time (or a different one) starts its warm-up. */
  async linked(phoneNumber: string): Promise<void> {
    const row = await this.store.linked(phoneNumber);
    if (row) {
      this.firstLinkedAt = row.first_linked_at;
      this.day = row.warmup_day;
      this.sent = row.warmup_sent;
    }
  }

  /** The current warm-up day (0-based) and its cap; undefined once the warm-up is over (or before the first link). */
  private current(): { day: number; cap: number; resumeAt: Date } | undefined {
    if (!this.firstLinkedAt || this.caps.length === 0) return undefined;
    const start = this.firstLinkedAt.getTime();
    const day = warmupDay(this.firstLinkedAt, this.now());
    if (day >= this.caps.length) return undefined;
    if (day !== this.day) {
      this.day = day;
      this.sent = 0;
    }
    return { day, cap: this.caps[day]!, resumeAt: new Date(start + (day + 1) * DAY_MS) };
  }

  allowance(): { remaining: number; resumeAt: Date } | null {
    if (this.pausedUntil && this.pausedUntil.getTime() > this.now()) return { remaining: 0, resumeAt: this.pausedUntil };
    const current = this.current();
    if (!current) return null;
    return { remaining: Math.max(0, current.cap - this.sent), resumeAt: current.resumeAt };
  }

  async consumed(count: number): Promise<void> {
    if (count <= 0 || !this.current()) return;
    this.sent += count;
    await this.store.saveWarmup(this.day, this.sent);
  }
}
