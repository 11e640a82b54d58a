/**
 * The device a send goes out from: the one asked for, else the oldest CONNECTED one, else a
 * linked but momentarily DISCONNECTED one (its messages wait in the queue until it is back).
 * One rule: the batched direct-send accept composes DEVICE_CHOICE_SQL into its statement, and
 * chooseDevice runs the same SQL where a refusal must say why.
 */
import type { Queryable } from '../platform/database.js';
import { AppError } from '../platform/errors.js';

/** Devices that can send, now or once reconnected. */
const SENDABLE_DEVICE_STATUSES = ['CONNECTED', 'DISCONNECTED'] as const;

/**
 * SQL: a subquery with at most one row (id, status): the device to send from for account
 * `account`, `requested` being the device asked for or NULL (both SQL expressions).
 */
export const DEVICE_CHOICE_SQL = (account: string, requested: string): string => `
  SELECT id, status FROM devices
   WHERE account_id = ${account} AND removed_at IS NULL AND status IN (${SENDABLE_DEVICE_STATUSES.map((s) => `'${s}'`).join(', ')})
     AND (${requested}::text IS NULL OR id = ${requested})
   ORDER BY (status = 'CONNECTED') DESC, created_at, id LIMIT 1`;

/** The device to send from, or the error that says why there is none. */
export async function chooseDevice(db: Queryable, accountId: string, requested: string | undefined): Promise<string> {
  const [chosen] = await db.query<{ id: string }>(DEVICE_CHOICE_SQL('$1', '$2'), [accountId, requested ?? null]);
  if (chosen) return chosen.id;
  throw await noDeviceError(db, accountId, requested);
}

/** Why no device could be chosen (the rare path: it may cost a query). */
export async function noDeviceError(db: Queryable, accountId: string, requested: string | undefined): Promise<AppError> {
  if (!requested) return new AppError('NO_CONNECTED_DEVICE', 'No linked device: add one with POST /devices and scan its QR code');
  const [device] = await db.query<{ status: string; removed: boolean }>(
    'SELECT status, removed_at IS NOT NULL AS removed FROM devices WHERE id = $1 AND account_id = $2',
    [requested, accountId],
  );
  if (!device || device.removed) return new AppError('NOT_FOUND', 'Device not found');
  return new AppError('NO_CONNECTED_DEVICE', `Device ${requested} is ${device.status}; link it by scanning its QR code first`);
}
