/**
 * Every statement on device_requests: what the API asks of the worker that holds a device's
 * network session (number look-ups, read receipts, presence, a group admin's changes). The API writes a request and
 * announces it on the bus (`request:<deviceId>` on waygate_devices); the holder serves the
 * device's open requests in order and writes the answer (a look-up) or removes the request (done).
 * Works the same when the API and the worker are different processes.
 */
import type { Queryable } from '../platform/database.js';
import type { NumberCheck, ParticipantAction, ParticipantOutcome, PresenceState, ReadMessage } from '../network/network.js';
import { newId } from '../platform/ids.js';

/** What a group admin asks of the network through the device (the API waits for the answer). */
export type GroupChange =
  | { action: 'create'; name: string; participants: string[] }
  | { action: 'rename'; group: string; name: string }
  | { action: 'participants'; group: string; change: ParticipantAction; phoneNumbers: string[] }
  | { action: 'invite'; group: string; revoke: boolean }
  | { action: 'leave'; group: string };

export type DeviceRequest =
  | { kind: 'check'; payload: { phoneNumbers: string[] } }
  | { kind: 'read'; payload: { chat: string; messages: ReadMessage[] } }
  | { kind: 'presence'; payload: { chat: string; state: PresenceState } }
  | { kind: 'group'; payload: GroupChange };

/** The requests the API waits for: their answers. */
export const ANSWERED_KINDS: ReadonlySet<DeviceRequest['kind']> = new Set(['check', 'group']);

/**
 * A request's answer: a look-up's checks; a group change's result (the new group's id, each
 * number's outcome, an invite code); or the network's refusal, which asking again would not change.
 */
export interface DeviceAnswer {
  checks?: NumberCheck[];
  groupId?: string;
  outcomes?: ParticipantOutcome[];
  inviteCode?: string;
  refused?: string;
}

export interface OpenRequest {
  id: string;
  created_at: Date;
  kind: DeviceRequest['kind'];
  payload: DeviceRequest['payload'];
}

export async function createRequest(db: Queryable, deviceId: string, request: DeviceRequest): Promise<string> {
  const id = newId('req');
  await db.query('INSERT INTO device_requests (id, device_id, kind, payload) VALUES ($1, $2, $3, $4::jsonb)', [id, deviceId, request.kind, JSON.stringify(request.payload)]);
  return id;
}

/** The device's unanswered requests, oldest first. */
export async function openRequests(db: Queryable, deviceId: string, limit = 50): Promise<OpenRequest[]> {
  return db.query<OpenRequest>(
    'SELECT id, created_at, kind, payload FROM device_requests WHERE device_id = $1 AND answered_at IS NULL ORDER BY created_at, id LIMIT $2',
    [deviceId, limit],
  );
}

export async function answerRequest(db: Queryable, id: string, answer: DeviceAnswer | null, error: string | null): Promise<void> {
  await db.query('UPDATE device_requests SET answer = $2::jsonb, error = $3, answered_at = now() WHERE id = $1', [id, answer === null ? null : JSON.stringify(answer), error]);
}

export async function getAnswer(db: Queryable, id: string): Promise<{ answer: DeviceAnswer | null; error: string | null; answered: boolean } | undefined> {
  const [row] = await db.query<{ answer: DeviceAnswer | null; error: string | null; answered: boolean }>(
    'SELECT answer, error, answered_at IS NOT NULL AS answered FROM device_requests WHERE id = $1',
    [id],
  );
  return row;
}

export async function deleteRequest(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM device_requests WHERE id = $1', [id]);
}

// ---- number_checks: the look-ups' answers, kept NUMBER_CHECK_TTL_DAYS --------------------------

export const NUMBER_CHECK_TTL_DAYS = 7;

export async function cachedChecks(db: Queryable, deviceId: string, phoneNumbers: string[]): Promise<Map<string, boolean>> {
  const rows = await db.query<{ phone_number: string; on_network: boolean }>(
    `SELECT phone_number, on_network FROM number_checks
      WHERE device_id = $1 AND phone_number = ANY($2::text[]) AND checked_at > now() - $3 * interval '1 day'`,
    [deviceId, phoneNumbers, NUMBER_CHECK_TTL_DAYS],
  );
  return new Map(rows.map((r) => [r.phone_number, r.on_network]));
}

export async function saveChecks(db: Queryable, deviceId: string, checks: NumberCheck[]): Promise<void> {
  if (checks.length === 0) return;
  await db.query(
    `INSERT INTO number_checks (device_id, phone_number, on_network, chat_id, checked_at)
     SELECT $1, c.phone, c.on_network, CASE WHEN c.on_network THEN c.phone END, now() FROM unnest($2::text[], $3::bool[]) AS c(phone, on_network)
     ON CONFLICT (device_id, phone_number) DO UPDATE SET on_network = EXCLUDED.on_network, chat_id = EXCLUDED.chat_id, checked_at = now()`,
    [deviceId, checks.map((c) => c.phoneNumber), checks.map((c) => c.onNetwork)],
  );
}

/** Requests no worker served within a day (the device stayed offline), answered look-ups left behind, and look-ups past their 7 days: one bounded batch of each. */
export async function deleteStale(db: Queryable, batch: number): Promise<number> {
  const [requests] = await db.query<{ n: number }>(
    `WITH gone AS (DELETE FROM device_requests WHERE id IN (SELECT id FROM device_requests WHERE created_at < now() - interval '1 day' LIMIT $1) RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [batch],
  );
  const [checks] = await db.query<{ n: number }>(
    `WITH gone AS (DELETE FROM number_checks WHERE ctid IN (SELECT ctid FROM number_checks WHERE checked_at < now() - $2 * interval '1 day' LIMIT $1) RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [batch, NUMBER_CHECK_TTL_DAYS],
  );
  return (requests?.n ?? 0) + (checks?.n ?? 0);
}
