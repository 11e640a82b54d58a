/**
 * Every statement on message_actions, and the message updates that come with an action: an
 * edit, a delete for everyone or a read receipt is written on the message, with its event, and
 * queued for the network in one statement, so the record, the event and the network's errand
 * commit together. The worker holding the device claims the queued actions (SKIP LOCKED) and
 * hands them to the network; a claim hides an action for CLAIM_HOLD, so one whose worker died
 * is taken again by the device's next owner. Edits and deletes the network reports (the other
 * side's, or the device's own phone's) are written here too.
 */
import type { Queryable } from '../platform/database.js';
import type { MessageRef } from '../network/network.js';
import { appendEventsSql, type EventType } from '../events/event-store.js';
import { messageRefOf, REFERENCED_JSON_SQL, REFERENCED_ROW_SQL } from './message-store.js';
import type { Referenced } from './message-kinds.js';

export type ActionKind = 'edit' | 'delete' | 'read';

/** How long a claimed action stays hidden from other claims (the worker handing it over died). */
const CLAIM_HOLD = "interval '2 minutes'";

/** SQL: the change each action makes to the message. */
const CHANGE: Record<ActionKind, string> = {
  edit: 'content = $3, edited_at = now()',
  delete: 'deleted_at = now()',
  read: 'read_at = now()',
};

/**
 * Applies an action of the account to message `id` (already checked and locked by the caller):
 * the change, the event (none for `read`), and, when `toNetwork`, the errand for the device's
 * owner. Returns the device to wake, or undefined when the message is gone.
 */
export async function recordAction(
  tx: Queryable,
  id: string,
  action: ActionKind,
  options: { content?: string | undefined; event?: EventType | undefined; toNetwork: boolean },
): Promise<string | undefined> {
  const [row] = await tx.query<{ device_id: string }>(
    `WITH upd AS (
       UPDATE messages m SET ${CHANGE[action]} WHERE m.id = $1
       RETURNING m.id, m.account_id, m.device_id, waygate_message_json(m) AS data),
     queued AS (
       INSERT INTO message_actions (account_id, device_id, message_id, action, content)
       SELECT account_id, device_id, id, $2, $3 FROM upd WHERE $4::boolean
       RETURNING 1),
     src AS (SELECT account_id, $5::text AS type, data FROM upd WHERE $5::text IS NOT NULL),
     ${appendEventsSql('src')}
     SELECT device_id FROM upd`,
    [id, action, options.content ?? null, options.toNetwork, options.event ?? null],
  );
  return row?.device_id;
}

/** An action claimed for the network, with the message it is about. */
export interface ClaimedAction {
  id: number;
  action: ActionKind;
  /** edit: the new text or caption. */
  content: string | null;
  attempts: number;
  /** The message, as the network knows it (null: no longer stored). */
  target: MessageRef | null;
}

/**
 * Claims up to `limit` due actions of a device, oldest first. Done actions are deleted, so the
 * table is nearly empty whenever it is analysed, and no plan of this claim may depend on that:
 * the walk is waygate_due_actions' (an ordered index walk that stops at `limit`, whatever the
 * statistics), and the claimed rows are updated by the addresses they were locked at (on such
 * statistics an update joined with the due ids by id compared every row of the table with every
 * claimed id: 1.6 million plan rows for 200 of 4,000).
 */
export async function claimActions(db: Queryable, deviceId: string, limit: number): Promise<ClaimedAction[]> {
  const rows = await db.query<{
    id: string; action: ActionKind; content: string | null; attempts: number;
    referenced: Referenced | null;
  }>(
    `WITH claimed AS (
       UPDATE message_actions a SET attempts = a.attempts + 1, due_at = now() + ${CLAIM_HOLD}
        WHERE a.ctid = ANY (ARRAY(SELECT waygate_due_actions($1, $2)))
       RETURNING a.id, a.action, a.content, a.attempts, a.message_id)
     SELECT c.id, c.action, c.content, c.attempts, ${REFERENCED_JSON_SQL('m')} AS referenced
       FROM claimed c ${REFERENCED_ROW_SQL('c.message_id', 'm')}
      ORDER BY c.id`,
    [deviceId, limit],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    action: r.action,
    content: r.content,
    attempts: r.attempts,
    target: r.referenced && messageRefOf(r.referenced),
  }));
}

export interface ActionOutcomes {
  done: number[];
  /** Given up: refused for good, or out of attempts. */
  failed: { id: number; code: string; message: string }[];
  retry: { id: number; dueAt: Date; code: string; message: string }[];
}

/** Writes what the network did with claimed actions: done ones go, failed ones keep their error, others wait for a retry. */
export async function finishActions(db: Queryable, outcomes: ActionOutcomes): Promise<void> {
  const { done, failed, retry } = outcomes;
  if (done.length + failed.length + retry.length === 0) return;
  await db.query(
    `WITH done AS (DELETE FROM message_actions WHERE id = ANY($1::bigint[]) RETURNING 1),
     failed AS (
       UPDATE message_actions a SET due_at = NULL, error_code = f.code, error_message = f.message
         FROM unnest($2::bigint[], $3::text[], $4::text[]) AS f(id, code, message) WHERE a.id = f.id RETURNING 1)
     UPDATE message_actions a SET due_at = r.due_at, error_code = r.code, error_message = r.message
       FROM unnest($5::bigint[], $6::timestamptz[], $7::text[], $8::text[]) AS r(id, due_at, code, message) WHERE a.id = r.id`,
    [
      done,
      failed.map((f) => f.id),
      failed.map((f) => f.code),
      failed.map((f) => f.message),
      retry.map((r) => r.id),
      retry.map((r) => r.dueAt),
      retry.map((r) => r.code),
      retry.map((r) => r.message),
    ],
  );
}

/** An edit or a delete the network reports (see NetworkEvent 'edited' / 'deleted'). */
export interface RemoteChange {
  networkMessageId: string;
  /** The other party of the chat (a number, or `<digits>@lid`). */
  chat: string;
  /** Made by the device's own phone on a message the device sent. */
  fromMe: boolean;
  /** edit: the new text or caption. */
  content?: string | undefined;
  at: Date;
}

/**
 * Writes an edit or a delete for everyone made by the sender of a message of the device, with
 * its message.edited / message.deleted event, in one statement; false when the device has no
 * such message from that sender (or it was deleted already).
 */
export async function applyRemoteChange(db: Queryable, deviceId: string, kind: 'edit' | 'delete', change: RemoteChange): Promise<boolean> {
  // $5 is null for a delete: the content stays.
  const set = kind === 'edit' ? 'content = $5::text, edited_at = GREATEST($4::timestamptz, m.edited_at)' : 'content = COALESCE($5::text, m.content), deleted_at = $4::timestamptz';
  const rows = await db.query(
    `WITH upd AS (
       UPDATE messages m SET ${set}
        WHERE m.device_id = $1 AND m.network_message_id = $2 AND m.deleted_at IS NULL
          AND (CASE WHEN $3::boolean THEN m.direction = 'out' ELSE m.direction = 'in' AND (m.peer = $6 OR m.peer_lid = $6) END)
       RETURNING m.account_id, waygate_message_json(m) AS data),
     src AS (SELECT account_id, $7::text AS type, data FROM upd),
     ${appendEventsSql('src')}
     SELECT 1 FROM upd`,
    [deviceId, change.networkMessageId, change.fromMe, change.at, change.content ?? null, change.chat, kind === 'edit' ? 'message.edited' : 'message.deleted'],
  );
  return rows.length > 0;
}
