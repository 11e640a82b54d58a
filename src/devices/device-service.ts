/**
 * Devices: linked numbers. PENDING (waiting for a QR scan) → CONNECTED ⇄ DISCONNECTED
 * (transient; reconnects by itself) → LOGGED_OUT (unlinked; needs a new QR). The API side
 * creates, reads and removes devices; the worker that holds a device's lease reports what the
 * network says through the transition methods here.
 */
import { randomUUID } from 'node:crypto';
import QRCode from 'qrcode';
import type { Bus } from '../platform/bus.js';
import type { Database, Queryable } from '../platform/database.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Page } from '../directory/contacts.js';
import { MAX_PAGE_SIZE, validatePhone } from '../directory/contacts.js';
import { appendEventsSql } from '../events/event-store.js';
import { MessageQueue } from '../messaging/message-queue.js';

export type DeviceStatus = 'PENDING' | 'CONNECTED' | 'DISCONNECTED' | 'LOGGED_OUT';

export interface Device {
  id: string;
  name: string;
  status: DeviceStatus;
  phoneNumber: string | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  connectedAt: Date | null;
  disconnectedAt: Date | null;
  loggedOutAt: Date | null;
  removedAt: Date | null;
}

export interface DevicePairingCode {
  /** The 8 characters to type on the phone (WhatsApp → Linked devices → Link with phone number instead). */
  code: string;
  phoneNumber: string;
  /** About when the network stops accepting the code; request a new one after it. */
  expiresAt: Date;
}

export interface DeviceQr {
  code: string;
  /** A PNG data URL of the code, ready for an <img>. */
  image: string;
  expiresAt: Date;
}

interface DeviceRow {
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
}

const toDevice = (r: DeviceRow): Device => ({
  id: r.id,
  name: r.name,
  status: r.status,
  phoneNumber: r.phone_number,
  lastError: r.last_error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  connectedAt: r.connected_at,
  disconnectedAt: r.disconnected_at,
  loggedOutAt: r.logged_out_at,
  removedAt: r.removed_at,
});

/** How long POST /devices and GET /devices/:id/qr wait for the worker to show the first code. */
const QR_WAIT_MS = 5_000;
/** How long POST /devices/:id/pairing-code waits for the worker holding the device to get a code from the network. */
const PAIRING_WAIT_MS = 25_000;

export class DeviceService {
  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    /** Whether the network links devices by pairing code too (the sandbox does not). */
    private readonly options: { pairingCodes?: boolean } = {},
  ) {}

  private async row(accountId: string, id: string): Promise<DeviceRow> {
    const [row] = await this.database.query<DeviceRow>('SELECT * FROM devices WHERE id = $1 AND account_id = $2', [id, accountId]);
    if (!row) throw new AppError('NOT_FOUND', 'Device not found');
    return row;
  }

  async list(accountId: string, options: { page: number; limit: number; status?: DeviceStatus | undefined }): Promise<Page<Device>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const params: unknown[] = [accountId, limit, (options.page - 1) * limit];
    let filter = '';
    if (options.status) {
      params.push(options.status);
      filter = ` AND status = $4`;
    }
    const rows = await this.database.query<DeviceRow & { total: number }>(
      `SELECT *, count(*) OVER () AS total FROM devices WHERE account_id = $1 AND removed_at IS NULL${filter}
        ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      params,
    );
    let total = rows[0]?.total;
    if (total === undefined) {
      const [counted] = await this.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM devices WHERE account_id = $1 AND removed_at IS NULL${options.status ? ' AND status = $2' : ''}`,
        options.status ? [accountId, options.status] : [accountId],
      );
      total = counted?.n ?? 0;
    }
    return { data: rows.map(toDevice), meta: { total, page: options.page, limit } };
  }

  async get(accountId: string, id: string): Promise<Device> {
    return toDevice(await this.row(accountId, id));
  }

  /** Devices that count against the plan: every device not logged out and not removed. */
  async countActive(accountId: string): Promise<number> {
    const [row] = await this.database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM devices WHERE account_id = $1 AND removed_at IS NULL AND status <> 'LOGGED_OUT'`,
      [accountId],
    );
    return row?.n ?? 0;
  }

  /**
   * Throws 403 PLAN_LIMIT when the account already has as many active devices (not logged out,
   * not removed) as its plan allows. Call inside the transaction that adds one: the account row
   * lock serialises concurrent adds, so the limit cannot be raced.
   */
  private async assertDeviceSlot(tx: Queryable, accountId: string): Promise<void> {
    const [plan] = await tx.query<{ max_devices: number | null }>(
      'SELECT p.max_devices FROM accounts a JOIN plans p ON p.id = a.plan_id WHERE a.id = $1 FOR UPDATE OF a',
      [accountId],
    );
    const maxDevices = plan?.max_devices ?? null;
    if (maxDevices === null) return;
    const [counted] = await tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM devices WHERE account_id = $1 AND removed_at IS NULL AND status <> 'LOGGED_OUT'`,
      [accountId],
    );
    const active = counted?.n ?? 0;
    if (active >= maxDevices) {
      throw new AppError('PLAN_LIMIT', `Your plan allows ${maxDevices} linked device${maxDevices === 1 ? '' : 's'}; remove one or upgrade the plan`, {
        limit: maxDevices,
        used: active,
      });
    }
  }

  async create(accountId: string, name: string): Promise<{ device: Device; qr: DeviceQr | null }> {
    const trimmed = name.trim();
    if (!trimmed) throw new AppError('VALIDATION_ERROR', 'name must not be empty', [{ field: 'name', message: 'must not be empty' }]);
    const id = newId('dev');
    await this.database.transaction(async (tx) => {
      await this.assertDeviceSlot(tx, accountId);
      await tx.query(`INSERT INTO devices (id, account_id, name, status) VALUES ($1, $2, $3, 'PENDING')`, [id, accountId, trimmed]);
    });
    await this.bus.publish('waygate_devices', id);
    const qr = await this.waitForQr(accountId, id, QR_WAIT_MS);
    return { device: await this.get(accountId, id), qr };
  }

  /** The current QR code of a PENDING device, waiting briefly for the worker to show the first one. */
  async qr(accountId: string, id: string): Promise<DeviceQr> {
    const row = await this.row(accountId, id);
    if (row.status !== 'PENDING') {
      throw new AppError('CONFLICT', `The device is ${row.status}; a QR code is shown only while it waits to be linked (PENDING)`, { status: row.status });
    }
    const qr = await this.waitForQr(accountId, id, QR_WAIT_MS);
    if (!qr) throw new AppError('SERVICE_UNAVAILABLE', 'No QR code yet: no worker has picked the device up; check that a worker is running');
    return qr;
  }

  /**
   * The pairing-code alternative to scanning the QR code: asks the worker that holds the PENDING
   * device for a code that the phone with `phoneNumber` accepts. The request goes through the
   * database (device_pairing_codes) and the bus, so it works when the API and the worker are
   * different processes.
   */
  async pairingCode(accountId: string, id: string, phoneNumber: string): Promise<DevicePairingCode> {
    const phone = validatePhone(phoneNumber);
    const row = await this.row(accountId, id);
    if (row.removed_at) throw new AppError('NOT_FOUND', 'Device not found');
    if (!this.options.pairingCodes) {
      throw new AppError('CONFLICT', 'This network links devices by QR code only (pairing codes need NETWORK=whatsapp); use GET /devices/:id/qr');
    }
    if (row.status !== 'PENDING') {
      throw new AppError('CONFLICT', `The device is ${row.status}; a pairing code is given only while it waits to be linked (PENDING)`, { status: row.status });
    }
    const requestId = randomUUID();
    await this.database.query(
      `INSERT INTO device_pairing_codes (device_id, request_id, phone_number) VALUES ($1, $2, $3)
       ON CONFLICT (device_id) DO UPDATE SET request_id = EXCLUDED.request_id, phone_number = EXCLUDED.phone_number,
              code = NULL, error = NULL, expires_at = NULL, requested_at = now()`,
      [id, requestId, phone],
    );
    const deadline = Date.now() + PAIRING_WAIT_MS;
    let wake: (() => void) | undefined;
    const unsubscribe = this.bus.subscribe('waygate_devices', (payload) => {
      if (payload === `pairing:${id}`) wake?.();
    });
    try {
      await this.bus.publish('waygate_devices', `pair:${id}`);
      for (;;) {
        const [answer] = await this.database.query<{ request_id: string; code: string | null; error: string | null; expires_at: Date | null }>(
          'SELECT request_id, code, error, expires_at FROM device_pairing_codes WHERE device_id = $1',
          [id],
        );
        if (!answer || answer.request_id !== requestId) throw new AppError('CONFLICT', 'A newer pairing-code request for this device replaced this one');
        if (answer.code && answer.expires_at) return { code: answer.code, phoneNumber: phone, expiresAt: answer.expires_at };
        if (answer.error) {
          // The network unreachable or the connection dropping is temporary (503); the device's state is a conflict (409).
          const temporary = /^(NOT_CONNECTED|NETWORK_ERROR)\b/.test(answer.error);
          throw new AppError(temporary ? 'SERVICE_UNAVAILABLE' : 'CONFLICT', `No pairing code: ${answer.error}`);
        }
        if (Date.now() >= deadline) {
          throw new AppError('SERVICE_UNAVAILABLE', 'No pairing code yet: no worker holding the device answered; check that a worker is running and can reach the network');
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(500, Math.max(0, deadline - Date.now())));
        });
      }
    } finally {
      unsubscribe();
    }
  }

  private async waitForQr(accountId: string, id: string, timeoutMs: number): Promise<DeviceQr | null> {
    const deadline = Date.now() + timeoutMs;
    let wake: (() => void) | undefined;
    const unsubscribe = this.bus.subscribe('waygate_devices', (payload) => {
      if (payload === `qr:${id}`) wake?.();
    });
    try {
      for (;;) {
        const row = await this.row(accountId, id);
        if (row.status === 'PENDING' && row.qr_code && row.qr_expires_at && row.qr_expires_at.getTime() > Date.now()) {
          return { code: row.qr_code, image: await QRCode.toDataURL(row.qr_code, { margin: 1, width: 280 }), expiresAt: row.qr_expires_at };
        }
        if (row.status !== 'PENDING' || Date.now() >= deadline) return null;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(250, Math.max(0, deadline - Date.now())));
        });
      }
    } finally {
      unsubscribe();
    }
  }

  /** Unlinks the device and removes it from listings; its messages stay. */
  async remove(accountId: string, id: string): Promise<Device> {
    // A device that was not LOGGED_OUT yet changes state here: its device.status event goes with it.
    const rows = await this.database.query<DeviceRow>(
      `WITH before AS (SELECT status FROM devices WHERE id = $1 AND account_id = $2),
       upd AS (
         UPDATE devices SET removed_at = COALESCE(removed_at, now()), status = 'LOGGED_OUT',
                logged_out_at = COALESCE(logged_out_at, now()), qr_code = NULL, qr_expires_at = NULL, updated_at = now()
          WHERE id = $1 AND account_id = $2 RETURNING *, waygate_device_json(devices) AS event_data),
       src AS (SELECT upd.account_id, 'device.status' AS type, upd.event_data AS data FROM upd, before WHERE before.status <> 'LOGGED_OUT'),
       ${appendEventsSql('src')}
       SELECT * FROM upd`,
      [id, accountId],
    );
    if (!rows[0]) throw new AppError('NOT_FOUND', 'Device not found');
    await new MessageQueue(this.database, 'api', 1).failDevice(id, 'DEVICE_REMOVED', 'The device was removed before the message was sent');
    // Its network credentials go too (the worker holding it also deletes them when it logs out).
    await this.database.query('DELETE FROM whatsapp_auth WHERE device_id = $1', [id]);
    await this.bus.publish('waygate_devices', `logout:${id}`);
    return toDevice(rows[0]);
  }

  /** Reconnect a DISCONNECTED device now, or start linking a LOGGED_OUT one again (new QR). */
  async reconnect(accountId: string, id: string): Promise<Device> {
    const row = await this.row(accountId, id);
    if (row.removed_at) throw new AppError('NOT_FOUND', 'Device not found');
    if (row.status === 'LOGGED_OUT') {
      // Linking it again makes it count against the plan's device limit once more.
      await this.database.transaction(async (tx) => {
        await this.assertDeviceSlot(tx, accountId);
        await tx.query(
          `WITH upd AS (
             UPDATE devices SET status = 'PENDING', phone_number = NULL, last_error = NULL, updated_at = now() WHERE id = $1 AND status = 'LOGGED_OUT'
             RETURNING account_id, waygate_device_json(devices) AS event_data),
           src AS (SELECT account_id, 'device.status' AS type, event_data AS data FROM upd),
           ${appendEventsSql('src')}
           SELECT count(*) FROM upd`,
          [id],
        );
      });
    }
    await this.bus.publish('waygate_devices', `reconnect:${id}`);
    return this.get(accountId, id);
  }
}
