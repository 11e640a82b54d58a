/**
 * The account overview: the daily counts (message-days.ts) over 7, 30 or 90 days, their rates,
 * failures by error code, and the devices and webhook endpoints with their health. Every figure
 * comes from small tables (a few hundred rows at most), never from the messages themselves, so it
 * answers as fast with a million messages as with ten.
 */
import type { Config } from '../config.js';
import type { DeviceService } from '../devices/device-service.js';
import type { WebhookService } from '../events/webhook-service.js';
import { readWarmups } from '../network/create-network.js';
import type { Database } from '../platform/database.js';
import { MAX_PAGE_SIZE } from '../directory/contacts.js';
import { readDays, readDeviceTotals, readFailures, today, type DayCounts } from './message-days.js';
import type { OutcomeCounts, Overview } from './overview-record.js';

const ZERO: OutcomeCounts = { sent: 0, delivered: 0, read: 0, failed: 0, incoming: 0 };

/** The UTC day `n` days after `day` (YYYY-MM-DD). */
function addDays(day: string, n: number): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + n);
  return date.toISOString().slice(0, 10);
}

const ratio = (part: number, whole: number): number | null => (whole > 0 ? Math.min(1, part / whole) : null);

export class OverviewService {
  constructor(
    private readonly database: Database,
    private readonly config: Config,
    private readonly devices: DeviceService,
    private readonly webhooks: WebhookService,
  ) {}

  async get(accountId: string, days: number): Promise<Overview> {
    const to = await today(this.database);
    const from = addDays(to, -(days - 1));
    const [rows, failuresByCode, deviceTotals, devices, webhooks] = await Promise.all([
      readDays(this.database, accountId, from),
      readFailures(this.database, accountId, from),
      readDeviceTotals(this.database, accountId, from),
      this.devices.list(accountId, { page: 1, limit: MAX_PAGE_SIZE }),
      this.webhooks.list(accountId, { page: 1, limit: MAX_PAGE_SIZE }),
    ]);
    const warmups = await readWarmups(this.config, this.database, devices.data.map((device) => device.id));

    const byDay = new Map(rows.map((row) => [row.day, row]));
    const daily: DayCounts[] = [];
    const totals = { ...ZERO };
    for (let i = 0; i < days; i++) {
      const day = addDays(from, i);
      const row = byDay.get(day) ?? { day, ...ZERO };
      daily.push(row);
      for (const key of Object.keys(ZERO) as (keyof OutcomeCounts)[]) totals[key] += row[key];
    }
    const perDevice = new Map(deviceTotals.map(({ deviceId, ...counts }) => [deviceId, counts]));
    return {
      days,
      from,
      to,
      totals,
      rates: {
        delivery: ratio(totals.delivered, totals.sent),
        read: ratio(totals.read, totals.delivered),
        failure: ratio(totals.failed, totals.sent + totals.failed),
      },
      daily,
      failuresByCode,
      devices: devices.data.map((device) => ({ ...device, totals: perDevice.get(device.id) ?? { ...ZERO }, warmup: warmups.get(device.id) ?? null })),
      webhooks: webhooks.data,
    };
  }
}
