/**
 * The device state machine, as data: PENDING (waiting for a QR scan) → CONNECTED ⇄ DISCONNECTED
 * (transient; reconnects by itself) → LOGGED_OUT (unlinked; needs a new QR). Pure: no database.
 *
 * TRANSITIONS says, for each event, which states it may leave and which state each of them goes
 * to. The device store builds its guards from it (`WHERE status = ANY(allowed)` and the new status
 * as a CASE), and the runner moves its in-memory copy of the status with the same table, so the
 * rule exists once.
 *
 * Invariants:
 * - LOGGED_OUT is left only by `relink` (someone asks to link the device again).
 * - Only `connected` enters CONNECTED, only from PENDING or DISCONNECTED.
 * - An event not listed for a state leaves that state untouched (and writes nothing).
 */

export const DEVICE_STATUSES = ['PENDING', 'CONNECTED', 'DISCONNECTED', 'LOGGED_OUT'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

/**
 * What can happen to a device: the network events the worker reports (connected, disconnected,
 * logout, stopped, warning, qr) and the API's requests (removed, relink).
 */
export const DEVICE_EVENTS = ['connected', 'disconnected', 'logout', 'stopped', 'warning', 'qr', 'removed', 'relink'] as const;
export type DeviceEvent = (typeof DEVICE_EVENTS)[number];

/** When a transition writes a device.status event (webhooks, GET /events). */
export type Announce = 'always' | 'whenStatusChanges' | 'never';

export interface Transition {
  /** From-state → to-state; states not listed may not take the event. */
  readonly moves: Readonly<Partial<Record<DeviceStatus, DeviceStatus>>>;
  readonly announce: Announce;
}

const stay = (...states: DeviceStatus[]): Partial<Record<DeviceStatus, DeviceStatus>> => Object.fromEntries(states.map((s) => [s, s]));

export const TRANSITIONS: Readonly<Record<DeviceEvent, Transition>> = {
  /** The phone linked the device (scan or pairing code), or a dropped connection came back. */
  connected: { moves: { PENDING: 'CONNECTED', DISCONNECTED: 'CONNECTED' }, announce: 'always' },
  /** The connection dropped; the runner reconnects with backoff. */
  disconnected: { moves: { CONNECTED: 'DISCONNECTED' }, announce: 'always' },
  /** Unlinked from the phone (or the stored credentials are gone). */
  logout: { moves: { PENDING: 'LOGGED_OUT', CONNECTED: 'LOGGED_OUT', DISCONNECTED: 'LOGGED_OUT' }, announce: 'always' },
  /** The session gave up until someone asks: a linked device shows DISCONNECTED, a linking one stays PENDING. */
  stopped: { moves: { PENDING: 'PENDING', CONNECTED: 'DISCONNECTED', DISCONNECTED: 'DISCONNECTED' }, announce: 'always' },
  /** Something worth telling (lastError) without a change of state. */
  warning: { moves: stay(...DEVICE_STATUSES), announce: 'always' },
  /** A new QR code to show: only while linking; not an event of its own (GET /devices/:id/qr reads it). */
  qr: { moves: stay('PENDING'), announce: 'never' },
  /** DELETE /devices/:id: from any state; announced only when the status changes. */
  removed: { moves: { PENDING: 'LOGGED_OUT', CONNECTED: 'LOGGED_OUT', DISCONNECTED: 'LOGGED_OUT', LOGGED_OUT: 'LOGGED_OUT' }, announce: 'whenStatusChanges' },
  /** POST /devices/:id/reconnect of a LOGGED_OUT device: linking starts again (a new QR code). */
  relink: { moves: { LOGGED_OUT: 'PENDING' }, announce: 'always' },
};

/** The states `event` may leave. */
export function allowedFrom(event: DeviceEvent): DeviceStatus[] {
  return DEVICE_STATUSES.filter((status) => TRANSITIONS[event].moves[status] !== undefined);
}

/** The state `event` moves `status` to, or undefined when that state may not take the event. */
export function nextStatus(event: DeviceEvent, status: DeviceStatus): DeviceStatus | undefined {
  return TRANSITIONS[event].moves[status];
}

/** The state after `event`: where the table says, or where it was when the event does not apply. */
export function advance(event: DeviceEvent, status: DeviceStatus): DeviceStatus {
  return nextStatus(event, status) ?? status;
}

/**
 * Devices that count against the plan and that a worker holds a lease on: not logged out (and,
 * in the store, not removed). A LOGGED_OUT device has no session until it is linked again.
 */
export function isActive(status: DeviceStatus): boolean {
  return status !== 'LOGGED_OUT';
}
