/**
 * The only code that runs statements on devices, device_pairing_codes and the lease columns
 * (lease_owner, lease_expires_at). One small named function per operation.
 *
 * Invariants:
 * - Every change of status goes through transition(): its guard (`status = ANY(allowed)`) and
 *   the new status are built from TRANSITIONS (device-states.ts), and its device.status event is
 *   written in the same statement (appendEventsSql), so a status change and its event commit
 *   together or not at all.
 * - "Active" (counts against the plan, may be leased) is ACTIVE below, one definition.
 * - A worker touches a lease only where lease_owner is its own id (acquire takes free or expired ones).
 */
import type { Database, Queryable } from '../platform/database.js';
import type { DeviceInfo } from '../network/network.js';
import { appendEventsSql } from '../events/event-store.js';
import { lockAccountPlan } from '../directory/account-store.js';
import { allowedFrom, TRANSITIONS, type DeviceEvent, type DeviceStatus } from './device-states.js';
import type { Device } from './device-record.js';
import { maskProxyUrl } from './device-proxy.js';

export type { Device } from './device-record.js';

export interface DeviceRow {
  id: string;
  account_id: string;
  name: string;
  status: DeviceStatus;
  phone_number: string | null;
  qr_code: string | null;
  qr_expires_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  connected_at: Date | null;
  disconnected_at: Date | null;
  logged_out_at: Date | null;
  removed_at: Date | null;
  proxy_url: string | null;
}

export const toDevice = (r: DeviceRow): Device => ({
  id: r.id,
  name: r.name,
  status: r.status,
  phoneNumber: r.phone_number,
  lastError: r.last_error,
  proxyUrl: maskProxyUrl(r.proxy_url),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  connectedAt: r.connected_at,
  disconnectedAt: r.disconnected_at,
  loggedOutAt: r.logged_out_at,
  removedAt: r.removed_at,
});

export interface PairingAnswer {
  request_id: string;
  code: string | null;
  error: string | null;
  expires_at: Date | null;
}

/** Not removed and not LOGGED_OUT (isActive in device-states.ts): counts against the plan, and a worker may hold it. */
const ACTIVE = `removed_at IS NULL AND status <> 'LOGGED_OUT'`;

/**
 * What LOGGED_OUT means for the row, whoever puts it there (the phone unlinked it, or it was
 * removed): no QR code, and logged_out_at is when it last went to LOGGED_OUT.
 */
const LOGGED_OUT_FIELDS = `logged_out_at = CASE WHEN status = 'LOGGED_OUT' THEN COALESCE(logged_out_at, now()) ELSE now() END,
       qr_code = NULL, qr_expires_at = NULL`;

const LEASE_FREED = 'lease_owner = NULL, lease_expires_at = NULL';

/** What a session is opened with (DeviceInfo), as columns of `devices d`. */
const DEVICE_INFO_COLUMNS = 'd.id, d.account_id, d.phone_number, d.status, d.proxy_url';
type DeviceInfoRow = Pick<DeviceRow, 'id' | 'account_id' | 'phone_number' | 'status' | 'proxy_url'>;
const toDeviceInfo = (r: DeviceInfoRow): DeviceInfo => ({ id: r.id, accountId: r.account_id, phoneNumber: r.phone_number, status: r.status, proxyUrl: r.proxy_url });

const quote = (status: DeviceStatus): string => `'${status}'`;

/** The new status of `event` as SQL: a constant when every allowed state goes to the same one, a CASE otherwise ('status': unchanged). */
function statusSql(event: DeviceEvent): string {
  const moves = Object.entries(TRANSITIONS[event].moves) as [DeviceStatus, DeviceStatus][];
  const targets = new Set(moves.map(([, to]) => to));
  if (targets.size === 1) return quote([...targets][0]!);
  const changes = moves.filter(([from, to]) => from !== to);
  if (changes.length === 0) return 'status';
  return `CASE ${changes.map(([from, to]) => `WHEN status = ${quote(from)} THEN ${quote(to)}`).join(' ')} ELSE status END`;
}

interface TransitionInput {
  id: string;
  /** Column assignments besides status and updated_at; `$2`… are `params`. */
  sets: string;
  params?: unknown[];
  /** More conditions (AND …), e.g. the account, or "only when it is news". */
  where?: string;
}

export class DeviceStore {
  constructor(private readonly database: Database) {}

  // ---- reads -------------------------------------------------------------------------------

  async get(accountId: string, id: string): Promise<DeviceRow | undefined> {
    const [row] = await this.database.query<DeviceRow>('SELECT * FROM devices WHERE id = $1 AND account_id = $2', [id, accountId]);
    return row;
  }

  /** Whether the account has this device and it was not removed. */
  async owns(accountId: string, id: string): Promise<boolean> {
    const rows = await this.database.query('SELECT 1 FROM devices WHERE id = $1 AND account_id = $2 AND removed_at IS NULL', [id, accountId]);
    return rows.length > 0;
  }

  /** A page of the account's devices that were not removed, newest first, with the total. */
  async list(accountId: string, page: { limit: number; offset: number; status?: DeviceStatus | undefined }): Promise<{ rows: DeviceRow[]; total: number }> {
    const params: unknown[] = [accountId, page.limit, page.offset];
    if (page.status) params.push(page.status);
    const filter = page.status ? ' AND status = $4' : '';
    const rows = await this.database.query<DeviceRow & { total: number }>(
      `SELECT *, count(*) OVER () AS total FROM devices WHERE account_id = $1 AND removed_at IS NULL${filter}
        ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      params,
    );
    // A page past the end has no row to carry the total: count apart.
    const total = rows[0]?.total ?? (await this.count(accountId, page.status));
    return { rows, total };
  }

  private async count(accountId: string, status: DeviceStatus | undefined): Promise<number> {
    const [counted] = await this.database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM devices WHERE account_id = $1 AND removed_at IS NULL${status ? ' AND status = $2' : ''}`,
      status ? [accountId, status] : [accountId],
    );
    return counted?.n ?? 0;
  }

  /** Devices that count against the plan (ACTIVE). `q`: a transaction, for the device-slot check. */
  async countActive(accountId: string, q: Queryable = this.database): Promise<number> {
    const [row] = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM devices WHERE account_id = $1 AND ${ACTIVE}`, [accountId]);
    return row?.n ?? 0;
  }

  /** The plan's device limit (null: none), taking the account row lock so that concurrent adds queue. */
  async lockDeviceLimit(tx: Queryable, accountId: string): Promise<number | null> {
    return (await lockAccountPlan(tx, accountId))?.maxDevices ?? null;
  }

  // ---- writes from the API -----------------------------------------------------------------

  async insert(tx: Queryable, device: { id: string; accountId: string; name: string; proxyUrl?: string | null }): Promise<void> {
    await tx.query(`INSERT INTO devices (id, account_id, name, status, proxy_url) VALUES ($1, $2, $3, 'PENDING', $4)`, [
      device.id,
      device.accountId,
      device.name,
      device.proxyUrl ?? null,
    ]);
  }

  /** Renames the device or changes its proxy (undefined: unchanged); the row, or undefined when the account has no such device. */
  async updateSettings(accountId: string, id: string, settings: { name?: string | undefined; proxyUrl?: string | null | undefined }): Promise<DeviceRow | undefined> {
    const [row] = await this.database.query<DeviceRow>(
      `UPDATE devices SET name = COALESCE($3, name), proxy_url = CASE WHEN $4 THEN $5 ELSE proxy_url END, updated_at = now()
        WHERE id = $1 AND account_id = $2 AND removed_at IS NULL RETURNING *`,
      [id, accountId, settings.name ?? null, settings.proxyUrl !== undefined, settings.proxyUrl ?? null],
    );
    return row;
  }

  /** The device as its session needs it, when `workerId` holds its lease. */
  async leasedInfo(id: string, workerId: string): Promise<DeviceInfo | undefined> {
    const [r] = await this.database.query<DeviceInfoRow>(`SELECT ${DEVICE_INFO_COLUMNS} FROM devices d WHERE id = $1 AND lease_owner = $2`, [id, workerId]);
    return r && toDeviceInfo(r);
  }

  /** Removed from listings and LOGGED_OUT (announced only if it was not LOGGED_OUT yet). */
  async markRemoved(accountId: string, id: string): Promise<DeviceRow | undefined> {
    return this.transition(this.database, 'removed', { id, sets: `removed_at = COALESCE(removed_at, now()), ${LOGGED_OUT_FIELDS}`, params: [accountId], where: 'AND account_id = $2' });
  }

  /** A LOGGED_OUT device starts linking again. */
  async markRelinking(tx: Queryable, id: string): Promise<boolean> {
    return Boolean(await this.transition(tx, 'relink', { id, sets: 'phone_number = NULL, last_error = NULL' }));
  }

  // ---- writes from the worker holding the device (see DeviceRunner) ------------------------

  async markConnected(id: string, phoneNumber: string): Promise<boolean> {
    const sets = 'phone_number = $2, connected_at = now(), qr_code = NULL, qr_expires_at = NULL, last_error = NULL';
    return Boolean(await this.transition(this.database, 'connected', { id, sets, params: [phoneNumber] }));
  }

  async markDisconnected(id: string, lastError: string): Promise<boolean> {
    return Boolean(await this.transition(this.database, 'disconnected', { id, sets: 'disconnected_at = now(), last_error = $2', params: [lastError] }));
  }

  /** Unlinked from the phone: LOGGED_OUT, and the lease is let go (nobody runs a LOGGED_OUT device). */
  async markLoggedOut(id: string, lastError: string): Promise<boolean> {
    return Boolean(await this.transition(this.database, 'logout', { id, sets: `last_error = $2, ${LOGGED_OUT_FIELDS}, ${LEASE_FREED}`, params: [lastError] }));
  }

  /** The session stopped retrying; a repeat of the same stop (same error, no QR code, not CONNECTED) is not news. */
  async markStopped(id: string, lastError: string): Promise<boolean> {
    return Boolean(
      await this.transition(this.database, 'stopped', {
        id,
        sets: `disconnected_at = CASE WHEN status = 'CONNECTED' THEN now() ELSE disconnected_at END, last_error = $2, qr_code = NULL, qr_expires_at = NULL`,
        params: [lastError],
        where: `AND (status = 'CONNECTED' OR last_error IS DISTINCT FROM $2 OR qr_code IS NOT NULL)`,
      }),
    );
  }

  /** A warning in lastError; a repeat of the same warning is not news. */
  async noteWarning(id: string, lastError: string): Promise<boolean> {
    return Boolean(await this.transition(this.database, 'warning', { id, sets: 'last_error = $2', params: [lastError], where: 'AND last_error IS DISTINCT FROM $2' }));
  }

  /** The QR code to show now (only while linking). */
  async setQr(id: string, code: string, expiresAt: Date): Promise<void> {
    await this.database.query(`UPDATE devices SET qr_code = $2, qr_expires_at = $3, updated_at = now() WHERE id = $1 AND status = ANY($4::text[])`, [
      id,
      code,
      expiresAt,
      allowedFrom('qr'),
    ]);
  }

  /**
   * One statement: the UPDATE guarded by the states `event` may leave, and its device.status
   * event (per TRANSITIONS[event].announce). Returns the row after, or undefined if nothing changed.
   */
  private async transition(q: Queryable, event: DeviceEvent, input: TransitionInput): Promise<DeviceRow | undefined> {
    const params = [input.id, ...(input.params ?? []), allowedFrom(event)];
    const status = statusSql(event);
    const update = `UPDATE devices SET ${status === 'status' ? '' : `status = ${status}, `}${input.sets}, updated_at = now()
       WHERE id = $1 AND status = ANY($${params.length}::text[]) ${input.where ?? ''}`;
    const announce = TRANSITIONS[event].announce;
    if (announce === 'never') return (await q.query<DeviceRow>(`${update} RETURNING *`, params))[0];
    // `before` reads the snapshot the statement started from: the status before the update.
    const onlyChanges = announce === 'whenStatusChanges';
    const [row] = await q.query<DeviceRow>(
      `WITH ${onlyChanges ? 'before AS (SELECT status FROM devices WHERE id = $1),' : ''}
       upd AS (${update} RETURNING *, waygate_device_json(devices) AS event_data),
       src AS (SELECT upd.account_id, 'device.status' AS type, upd.event_data AS data FROM upd${onlyChanges ? ' JOIN before ON before.status IS DISTINCT FROM upd.status' : ''}),
       ${appendEventsSql('src')}
       SELECT * FROM upd`,
      params,
    );
    return row;
  }

  // ---- pairing codes (DeviceService asks, the worker holding the device answers) -----------

  /** Opens a request; it replaces any earlier one of the device. */
  async requestPairingCode(deviceId: string, requestId: string, phoneNumber: string): Promise<void> {
    await this.database.query(
      `INSERT INTO device_pairing_codes (device_id, request_id, phone_number) VALUES ($1, $2, $3)
       ON CONFLICT (device_id) DO UPDATE SET request_id = EXCLUDED.request_id, phone_number = EXCLUDED.phone_number,
              code = NULL, error = NULL, expires_at = NULL, requested_at = now()`,
      [deviceId, requestId, phoneNumber],
    );
  }

  async pairingAnswer(deviceId: string): Promise<PairingAnswer | undefined> {
    const [row] = await this.database.query<PairingAnswer>('SELECT request_id, code, error, expires_at FROM device_pairing_codes WHERE device_id = $1', [deviceId]);
    return row;
  }

  /** The device's request that has no answer yet, if any. */
  async openPairingRequest(deviceId: string): Promise<{ request_id: string; phone_number: string } | undefined> {
    const [row] = await this.database.query<{ request_id: string; phone_number: string }>(
      'SELECT request_id, phone_number FROM device_pairing_codes WHERE device_id = $1 AND code IS NULL AND error IS NULL',
      [deviceId],
    );
    return row;
  }

  /** Answers that request (a newer one is left alone). */
  async answerPairing(deviceId: string, requestId: string, answer: { code: string | null; error: string | null; expiresAt: Date | null }): Promise<void> {
    await this.database.query('UPDATE device_pairing_codes SET code = $3, error = $4, expires_at = $5 WHERE device_id = $1 AND request_id = $2', [
      deviceId,
      requestId,
      answer.code,
      answer.error,
      answer.expiresAt,
    ]);
  }

  // ---- leases (see DeviceSupervisor) --------------------------------------------------------

  /** Takes up to `limit` active devices whose lease is free or expired, oldest first. */
  async acquireLeases(workerId: string, leaseMs: number, limit: number): Promise<DeviceInfo[]> {
    const rows = await this.database.query<DeviceInfoRow>(
      `UPDATE devices d SET lease_owner = $1, lease_expires_at = now() + $2 * interval '1 millisecond'
        WHERE d.id IN (SELECT id FROM devices
                        WHERE ${ACTIVE} AND (lease_owner IS NULL OR lease_expires_at < now())
                        ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING ${DEVICE_INFO_COLUMNS}`,
      [workerId, leaseMs, limit],
    );
    return rows.map(toDeviceInfo);
  }

  /**
   * Renews this worker's heartbeat and answers its fair share of the active devices: the ceiling
   * of devices / live workers (itself included), so N workers hold close to 1/N each.
   */
  async heartbeat(workerId: string, leaseMs: number): Promise<{ workers: number; devices: number; share: number }> {
    const [row] = await this.database.query<{ workers: number; devices: number }>(
      `WITH beat AS (
         INSERT INTO workers (id, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')
         ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at RETURNING id)
       SELECT 1 + (SELECT count(*) FROM workers WHERE expires_at > now() AND id <> $1)::int AS workers,
              (SELECT count(*) FROM devices WHERE ${ACTIVE})::int AS devices,
              (SELECT count(*) FROM beat)::int AS beat`,
      [workerId, leaseMs],
    );
    const workers = row?.workers ?? 1;
    const devices = row?.devices ?? 0;
    return { workers, devices, share: Math.ceil(devices / workers) };
  }

  /** A worker that stops leaves the count at once (and heartbeats dead for an hour are dropped). */
  async leaveWorkers(workerId: string): Promise<void> {
    await this.database.query(`DELETE FROM workers WHERE id = $1 OR expires_at < now() - interval '1 hour'`, [workerId]);
  }

  /** Renews the leases the worker still holds on active devices; returns their ids. */
  async renewLeases(workerId: string, leaseMs: number, ids: string[]): Promise<Set<string>> {
    const kept = await this.database.query<{ id: string }>(
      `UPDATE devices SET lease_expires_at = now() + $2 * interval '1 millisecond'
        WHERE lease_owner = $1 AND id = ANY($3::text[]) AND ${ACTIVE} RETURNING id`,
      [workerId, leaseMs, ids],
    );
    return new Set(kept.map((row) => row.id));
  }

  /** Why a lease was not renewed: the device's state and who holds it now. */
  async leaseState(id: string): Promise<{ removed: boolean; status: DeviceStatus; lease_owner: string | null } | undefined> {
    const [row] = await this.database.query<{ removed: boolean; status: DeviceStatus; lease_owner: string | null }>(
      'SELECT removed_at IS NOT NULL AS removed, status, lease_owner FROM devices WHERE id = $1',
      [id],
    );
    return row;
  }

  async releaseLease(id: string, workerId: string): Promise<void> {
    await this.database.query(`UPDATE devices SET ${LEASE_FREED} WHERE id = $1 AND lease_owner = $2`, [id, workerId]);
  }

  async releaseAllLeases(workerId: string): Promise<void> {
    await this.database.query(`UPDATE devices SET ${LEASE_FREED} WHERE lease_owner = $1`, [workerId]);
  }
}

/** Devices that were not removed, counted by status (the waygate_devices gauge). */
export async function countDevicesByStatus(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM devices WHERE removed_at IS NULL GROUP BY status');
}
