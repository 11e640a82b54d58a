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
import { MessageQueue } from '../messaging/message-queue.js';
import { deleteWhatsAppCredentials } from '../network/whatsapp/whatsapp-store.js';
import type { DeviceStatus } from './device-states.js';
import { DeviceStore, toDevice, type Device, type DeviceRow } from './device-store.js';
import { proxyUrlProblem } from './device-proxy.js';

export type { DeviceStatus } from './device-states.js';
export type { Device } from './device-store.js';

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

function validName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw new AppError('VALIDATION_ERROR', 'name must not be empty', [{ field: 'name', message: 'must not be empty' }]);
  return trimmed;
}

function validProxy(proxyUrl: string | null): string | null {
  if (proxyUrl === null) return null;
  const problem = proxyUrlProblem(proxyUrl.trim());
  if (problem) throw new AppError('VALIDATION_ERROR', `proxyUrl ${problem}`, [{ field: 'proxyUrl', message: problem }]);
  return proxyUrl.trim();
}

/** How long POST /devices and GET /devices/:id/qr wait for the worker to show the first code. */
const QR_WAIT_MS = 5_000;
/** How long POST /devices/:id/pairing-code waits for the worker holding the device to get a code from the network. */
const PAIRING_WAIT_MS = 25_000;

interface Poll<T> {
  /** What on waygate_devices ends a wait early. */
  payload: string;
  deadline: number;
  everyMs: number;
  /** Runs once listening (so that an answer to it cannot be missed). */
  first?: () => Promise<void>;
  /** A value ends the poll (so does a throw); undefined: not yet. */
  check: () => Promise<T | undefined>;
  onTimeout: () => T;
}

/** Polls `check` every `everyMs` and whenever `payload` arrives on waygate_devices, until `deadline`. */
async function pollDevice<T>(bus: Bus, poll: Poll<T>): Promise<T> {
  let wake: (() => void) | undefined;
  const unsubscribe = bus.subscribe('waygate_devices', (heard) => {
    if (heard === poll.payload) wake?.();
  });
  try {
    await poll.first?.();
    for (;;) {
      const result = await poll.check();
      if (result !== undefined) return result;
      if (Date.now() >= poll.deadline) return poll.onTimeout();
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, Math.min(poll.everyMs, Math.max(0, poll.deadline - Date.now())));
      });
    }
  } finally {
    unsubscribe();
  }
}

export class DeviceService {
  private readonly store: DeviceStore;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    /** Whether the network links devices by pairing code too (the sandbox does not). */
    private readonly options: { pairingCodes?: boolean } = {},
  ) {
    this.store = new DeviceStore(database);
  }

  private async row(accountId: string, id: string): Promise<DeviceRow> {
    const row = await this.store.get(accountId, id);
    if (!row) throw new AppError('NOT_FOUND', 'Device not found');
    return row;
  }

  async list(accountId: string, options: { page: number; limit: number; status?: DeviceStatus | undefined }): Promise<Page<Device>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const { rows, total } = await this.store.list(accountId, { limit, offset: (options.page - 1) * limit, status: options.status });
    return { data: rows.map(toDevice), meta: { total, page: options.page, limit } };
  }

  async get(accountId: string, id: string): Promise<Device> {
    return toDevice(await this.row(accountId, id));
  }

  /** Devices that count against the plan: every device not logged out and not removed. */
  async countActive(accountId: string): Promise<number> {
    return this.store.countActive(accountId);
  }

  /**
   * Throws 403 PLAN_LIMIT when the account already has as many active devices (not logged out,
   * not removed) as its plan allows. Call inside the transaction that adds one: the account row
   * lock serialises concurrent adds, so the limit cannot be raced.
   */
  private async assertDeviceSlot(tx: Queryable, accountId: string): Promise<void> {
    const maxDevices = await this.store.lockDeviceLimit(tx, accountId);
    if (maxDevices === null) return;
    const active = await this.store.countActive(accountId, tx);
    if (active >= maxDevices) {
      throw new AppError('PLAN_LIMIT', `Your plan allows ${maxDevices} linked device${maxDevices === 1 ? '' : 's'}; remove one or upgrade the plan`, {
        limit: maxDevices,
        used: active,
      });
    }
  }

  async create(accountId: string, name: string, proxyUrl: string | null = null): Promise<{ device: Device; qr: DeviceQr | null }> {
    const trimmed = validName(name);
    const proxy = validProxy(proxyUrl);
    const id = newId('dev');
    await this.database.transaction(async (tx) => {
      await this.assertDeviceSlot(tx, accountId);
      await this.store.insert(tx, { id, accountId, name: trimmed, proxyUrl: proxy });
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
    await this.store.requestPairingCode(id, requestId, phone);
    return pollDevice(this.bus, {
      payload: `pairing:${id}`,
      deadline: Date.now() + PAIRING_WAIT_MS,
      everyMs: 500,
      first: () => this.bus.publish('waygate_devices', `pair:${id}`),
      check: () => this.pairingAnswer(id, requestId, phone),
      onTimeout: () => {
        throw new AppError('SERVICE_UNAVAILABLE', 'No pairing code yet: no worker holding the device answered; check that a worker is running and can reach the network');
      },
    });
  }

  /** The worker's answer to request `requestId`: the code, an error thrown, or undefined (not yet). */
  private async pairingAnswer(id: string, requestId: string, phone: string): Promise<DevicePairingCode | undefined> {
    const answer = await this.store.pairingAnswer(id);
    if (!answer || answer.request_id !== requestId) throw new AppError('CONFLICT', 'A newer pairing-code request for this device replaced this one');
    if (answer.code && answer.expires_at) return { code: answer.code, phoneNumber: phone, expiresAt: answer.expires_at };
    if (!answer.error) return undefined;
    // The network unreachable or the connection dropping is temporary (503); the device's state is a conflict (409).
    const temporary = /^(NOT_CONNECTED|NETWORK_ERROR)\b/.test(answer.error);
    throw new AppError(temporary ? 'SERVICE_UNAVAILABLE' : 'CONFLICT', `No pairing code: ${answer.error}`);
  }

  private async waitForQr(accountId: string, id: string, timeoutMs: number): Promise<DeviceQr | null> {
    const check = async (): Promise<DeviceQr | null | undefined> => {
      const row = await this.row(accountId, id);
      if (row.status === 'PENDING' && row.qr_code && row.qr_expires_at && row.qr_expires_at.getTime() > Date.now()) {
        return { code: row.qr_code, image: await QRCode.toDataURL(row.qr_code, { margin: 1, width: 280 }), expiresAt: row.qr_expires_at };
      }
      return row.status !== 'PENDING' ? null : undefined;
    };
    return pollDevice(this.bus, { payload: `qr:${id}`, deadline: Date.now() + timeoutMs, everyMs: 250, check, onTimeout: () => null });
  }

  /**
   * Renames the device or changes its proxy (undefined: unchanged, null: direct). A new proxy
   * takes effect at once: the worker holding the device reopens its session through it.
   */
  async update(accountId: string, id: string, changes: { name?: string | undefined; proxyUrl?: string | null | undefined }): Promise<Device> {
    const name = changes.name === undefined ? undefined : validName(changes.name);
    const proxyUrl = changes.proxyUrl === undefined ? undefined : validProxy(changes.proxyUrl);
    const before = await this.row(accountId, id);
    if (before.removed_at) throw new AppError('NOT_FOUND', 'Device not found');
    const row = await this.store.updateSettings(accountId, id, { name, proxyUrl });
    if (!row) throw new AppError('NOT_FOUND', 'Device not found');
    if (proxyUrl !== undefined && proxyUrl !== before.proxy_url) await this.bus.publish('waygate_devices', `restart:${id}`);
    return toDevice(row);
  }

  /** Unlinks the device and removes it from listings; its messages stay. */
  async remove(accountId: string, id: string): Promise<Device> {
    const row = await this.store.markRemoved(accountId, id);
    if (!row) throw new AppError('NOT_FOUND', 'Device not found');
    await new MessageQueue(this.database, 'api', 1).failDevice(id, 'DEVICE_REMOVED', 'The device was removed before the message was sent');
    // Its network credentials go too (the worker holding it also deletes them when it logs out).
    await deleteWhatsAppCredentials(this.database, id);
    await this.bus.publish('waygate_devices', `logout:${id}`);
    return toDevice(row);
  }

  /** Reconnect a DISCONNECTED device now, or start linking a LOGGED_OUT one again (new QR). */
  async reconnect(accountId: string, id: string): Promise<Device> {
    const row = await this.row(accountId, id);
    if (row.removed_at) throw new AppError('NOT_FOUND', 'Device not found');
    if (row.status === 'LOGGED_OUT') {
      // Linking it again makes it count against the plan's device limit once more.
      await this.database.transaction(async (tx) => {
        await this.assertDeviceSlot(tx, accountId);
        await this.store.markRelinking(tx, id);
      });
    }
    await this.bus.publish('waygate_devices', `reconnect:${id}`);
    return this.get(accountId, id);
  }
}
