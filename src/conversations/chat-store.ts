/**
 * Every statement on chats (one row per conversation of a device) and the chat-ordered reads of
 * messages. A message's chat is COALESCE(chat_id, peer): its group for a group member's
 * message, else the other party; `messages_chat_idx` serves that order.
 *
 * Writers, each touching a chat row in (device_id, id) order so none waits on another in a cycle:
 * - incoming messages: CHAT_OF_INCOMING_SQL inside the statement that stores the message;
 * - outgoing messages: recordOutgoing, in batches after their outcome (off the send path);
 * - the network's group lists (upsertGroups), a LID learnt (applyIdentity), a read (markRead).
 * A contact's presence (recordPresence) is an event of the chat only: it changes no row here.
 */
import type { Database, Queryable } from '../platform/database.js';
import type { GroupInfo } from '../network/network.js';
import type { MessageRow } from '../messaging/message-model.js';
import { toMessage } from '../messaging/message-model.js';
import type { Chat, ChatDetail, ChatPresence, ChatType, Participant } from './chat-record.js';
import type { Jsonified } from '../platform/record-schema.js';
import { appendEventsSql } from '../events/event-store.js';

export interface ChatRow {
  device_id: string;
  id: string;
  account_id: string;
  type: ChatType;
  name: string | null;
  phone_number: string | null;
  lid: string | null;
  last_message_id: string | null;
  last_activity_at: Date;
  unread_count: number;
  participants: Participant[] | null;
  contact_name?: string | null;
}

/** The kind of chat an id names. */
export const chatTypeOf = (chatId: string): ChatType => (chatId.endsWith('@g.us') ? 'group' : 'direct');

/** The one place that maps a chat's columns to its fields. */
export function toChat(r: ChatRow, lastMessage: MessageRow | undefined): Chat {
  return {
    id: r.id,
    deviceId: r.device_id,
    type: r.type,
    name: r.name ?? r.contact_name ?? null,
    phoneNumber: r.phone_number,
    lid: r.lid,
    lastMessage: lastMessage ? toMessage(lastMessage) : null,
    unreadCount: r.unread_count,
    participantsCount: r.participants ? r.participants.length : null,
    updatedAt: r.last_activity_at,
  };
}

export const toChatDetail = (r: ChatRow, lastMessage: MessageRow | undefined): ChatDetail => ({
  ...toChat(r, lastMessage),
  participants: r.type === 'group' ? (r.participants ?? []) : null,
});

/** SQL: a chat row upsert's update of the activity: a message newer than the chat's last one becomes it. */
const TAKE_NEWER = `
  last_message_id = CASE WHEN EXCLUDED.last_activity_at >= chats.last_activity_at OR chats.last_message_id IS NULL
                         THEN EXCLUDED.last_message_id ELSE chats.last_message_id END,
  last_activity_at = GREATEST(chats.last_activity_at, EXCLUDED.last_activity_at)`;

/**
 * SQL (a data-modifying CTE body): the chat of each incoming message in `ins` (columns id,
 * account_id, device_id, peer, peer_lid, chat_id, type, created_at) gets it as its last message
 * and one more unread (a reaction is shown, not counted).
 */
export const CHAT_OF_INCOMING_SQL = (ins: string): string => `
  INSERT INTO chats AS chats (device_id, id, account_id, type, phone_number, lid, last_message_id, last_activity_at, unread_count)
  SELECT i.device_id, COALESCE(i.chat_id, i.peer), i.account_id, CASE WHEN i.chat_id IS NULL THEN 'direct' ELSE 'group' END,
         CASE WHEN i.chat_id IS NULL AND i.peer ~ '^[0-9]+$' THEN i.peer END, CASE WHEN i.chat_id IS NULL THEN i.peer_lid END,
         i.id, i.created_at, CASE WHEN i.type = 'REACTION' THEN 0 ELSE 1 END
    FROM ${ins} i
  ON CONFLICT (device_id, id) DO UPDATE SET ${TAKE_NEWER},
    unread_count = chats.unread_count + EXCLUDED.unread_count,
    lid = COALESCE(EXCLUDED.lid, chats.lid)
  RETURNING 1`;

export interface OutgoingActivity {
  accountId: string;
  deviceId: string;
  /** The recipient: a number, or a group id. */
  chatId: string;
  messageId: string;
}

/**
 * Outgoing messages that were handed to the network (sent or failed) become their chats' last
 * messages, in one statement for a batch. Message ids sort by creation time, so the newest of a
 * chat in the batch is its greatest id.
 */
export async function recordOutgoing(db: Pick<Database, 'queryPrepared'>, batch: OutgoingActivity[]): Promise<void> {
  if (batch.length === 0) return;
  await db.queryPrepared({
    // Key lookups and inserts only: planned once per connection (planning cost as much as running it).
    name: 'chats_record_outgoing',
    genericPlan: true,
    text: `INSERT INTO chats AS chats (device_id, id, account_id, type, phone_number, last_message_id, last_activity_at)
     SELECT DISTINCT ON (b.device_id, b.chat_id) b.device_id, b.chat_id, b.account_id,
            CASE WHEN b.chat_id LIKE '%@g.us' THEN 'group' ELSE 'direct' END, CASE WHEN b.chat_id ~ '^[0-9]+$' THEN b.chat_id END,
            b.message_id, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS b(account_id, device_id, chat_id, message_id)
       JOIN devices d ON d.id = b.device_id
      ORDER BY b.device_id, b.chat_id, b.message_id DESC
     ON CONFLICT (device_id, id) DO UPDATE SET ${TAKE_NEWER}`,
    values: [batch.map((b) => b.accountId), batch.map((b) => b.deviceId), batch.map((b) => b.chatId), batch.map((b) => b.messageId)],
  });
}

/** The device's groups as the network lists them: created, or their name and members brought up to date. */
export async function upsertGroups(db: Queryable, deviceId: string, groups: GroupInfo[]): Promise<number> {
  if (groups.length === 0) return 0;
  const sorted = [...groups].sort((a, b) => (a.id < b.id ? -1 : 1));
  const rows = await db.query(
    `INSERT INTO chats AS chats (device_id, id, account_id, type, name, participants, last_activity_at)
     SELECT d.id, g.id, d.account_id, 'group', g.name, g.participants::jsonb, COALESCE(g.created_at, now())
       FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS g(id, name, participants, created_at, n)
       JOIN devices d ON d.id = $1
      ORDER BY g.n
     ON CONFLICT (device_id, id) DO UPDATE SET name = EXCLUDED.name, participants = EXCLUDED.participants
     RETURNING 1`,
    [
      deviceId,
      sorted.map((g) => g.id),
      sorted.map((g) => g.name),
      sorted.map((g) => JSON.stringify(g.participants.map((p) => ({ phoneNumber: p.phoneNumber, lid: p.lid ?? null, admin: p.admin })))),
      sorted.map((g) => g.createdAt ?? null),
    ],
  );
  return rows.length;
}

/**
 * The network told the number behind a LID: a chat kept under the LID (its number was hidden)
 * becomes the number's chat, its messages with it (found along messages_chat_idx); the number's
 * chat and group members show the LID beside the number. A member's messages in group chats keep
 * the LID as their sender.
 */
export async function applyIdentity(db: Queryable, deviceId: string, lid: string, phoneNumber: string): Promise<void> {
  await db.query(
    `WITH moved AS (
       UPDATE messages SET peer = $3, peer_lid = COALESCE(peer_lid, $2) WHERE device_id = $1 AND COALESCE(chat_id, peer) = $2 RETURNING 1),
     old AS (DELETE FROM chats WHERE device_id = $1 AND id = $2 AND (SELECT count(*) FROM moved) >= 0 RETURNING *),
     merged AS (
       INSERT INTO chats AS chats (device_id, id, account_id, type, phone_number, lid, last_message_id, last_activity_at, unread_count, created_at)
       SELECT device_id, $3, account_id, 'direct', $3, $2, last_message_id, last_activity_at, unread_count, created_at FROM old
       ON CONFLICT (device_id, id) DO UPDATE SET ${TAKE_NEWER}, unread_count = chats.unread_count + EXCLUDED.unread_count, lid = $2
       RETURNING 1)
     UPDATE chats SET lid = $2 WHERE device_id = $1 AND id = $3 AND lid IS DISTINCT FROM $2 AND (SELECT count(*) FROM merged) >= 0`,
    [deviceId, lid, phoneNumber],
  );
  await db.query(
    `UPDATE chats c SET participants = (
       SELECT jsonb_agg(CASE WHEN p->>'lid' = $2 OR p->>'phoneNumber' = $2 THEN p || jsonb_build_object('phoneNumber', $3::text, 'lid', $2::text) ELSE p END ORDER BY n)
         FROM jsonb_array_elements(c.participants) WITH ORDINALITY AS x(p, n))
      WHERE c.device_id = $1 AND c.type = 'group' AND (c.participants @> jsonb_build_array(jsonb_build_object('lid', $2::text))
                                                       OR c.participants @> jsonb_build_array(jsonb_build_object('phoneNumber', $2::text)))`,
    [deviceId, lid, phoneNumber],
  );
}

export interface ChatFilter {
  deviceId?: string | undefined;
  type?: ChatType | undefined;
  /** A case-insensitive substring of the id, the number or the name (LIKE-escaped by the caller). */
  search?: string | undefined;
}

export interface ChatPosition {
  at: Date;
  deviceId: string;
  id: string;
}

const CHAT_COLUMNS = `c.device_id, c.id, c.account_id, c.type, c.name, c.phone_number, c.lid, c.last_message_id, c.last_activity_at, c.unread_count,
  c.participants, co.name AS contact_name`;
const CONTACT_JOIN = 'LEFT JOIN contacts co ON co.account_id = c.account_id AND co.phone_number = c.phone_number';

function chatWhere(accountId: string, filter: ChatFilter): { where: string[]; params: unknown[] } {
  const where = ['c.account_id = $1'];
  const params: unknown[] = [accountId];
  const add = (sql: (p: string) => string, value: unknown): void => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (filter.deviceId) add((p) => `c.device_id = ${p}`, filter.deviceId);
  if (filter.type) add((p) => `c.type = ${p}`, filter.type);
  if (filter.search) add((p) => `(c.id ILIKE ${p} OR c.name ILIKE ${p} OR c.phone_number ILIKE ${p} OR co.name ILIKE ${p})`, `%${filter.search}%`);
  return { where, params };
}

/**
 * A page of chats, newest activity first, after `after` (keyset) or skipping `offset`; one row
 * beyond the page says whether there is more. The page is read along chats_account_activity_idx
 * first; contact names are joined to its rows only (a search joins them to filter).
 */
export async function listChats(db: Queryable, accountId: string, filter: ChatFilter, limit: number, offset: number, after: ChatPosition | undefined): Promise<ChatRow[]> {
  const { where, params } = chatWhere(accountId, filter);
  if (after) {
    params.push(after.at, after.deviceId, after.id);
    const n = params.length;
    where.push(`(c.last_activity_at, c.device_id, c.id) < ($${n - 2}::timestamptz, $${n - 1}::text, $${n}::text)`);
  }
  params.push(limit + 1, offset);
  const page = `SELECT c.* FROM chats c ${filter.search ? CONTACT_JOIN : ''} WHERE ${where.join(' AND ')}
      ORDER BY c.last_activity_at DESC, c.device_id DESC, c.id DESC LIMIT $${params.length - 1} OFFSET $${params.length}`;
  return db.query<ChatRow>(`SELECT ${CHAT_COLUMNS} FROM (${page}) AS c ${CONTACT_JOIN} ORDER BY c.last_activity_at DESC, c.device_id DESC, c.id DESC`, params);
}

/** How many chats match, counting at most `cap` + 1 (contacts are joined only for a search). */
export async function countChats(db: Queryable, accountId: string, filter: ChatFilter, cap: number): Promise<number> {
  const { where, params } = chatWhere(accountId, filter);
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM chats c ${filter.search ? CONTACT_JOIN : ''} WHERE ${where.join(' AND ')} LIMIT ${cap + 1}) AS capped`,
    params,
  );
  return row?.n ?? 0;
}

export async function getChat(db: Queryable, accountId: string, deviceId: string, chatId: string): Promise<ChatRow | undefined> {
  const [row] = await db.query<ChatRow>(`SELECT ${CHAT_COLUMNS} FROM chats c ${CONTACT_JOIN} WHERE c.account_id = $1 AND c.device_id = $2 AND c.id = $3`, [
    accountId,
    deviceId,
    chatId,
  ]);
  return row;
}

/** The device's number left a group: it is no longer among the chat's participants (the chat and its history stay). */
export async function leftGroup(db: Queryable, deviceId: string, chatId: string): Promise<void> {
  await db.query(
    `UPDATE chats c SET participants = COALESCE(
        (SELECT jsonb_agg(p ORDER BY n) FROM jsonb_array_elements(c.participants) WITH ORDINALITY AS e(p, n) WHERE p->>'phoneNumber' IS DISTINCT FROM d.phone_number),
        '[]'::jsonb)
       FROM devices d
      WHERE d.id = c.device_id AND c.device_id = $1 AND c.id = $2 AND c.participants IS NOT NULL`,
    [deviceId, chatId],
  );
}

/** Messages of one chat of a device, newest first, before a message (keyset on created_at, id). */
export async function chatMessages(db: Queryable, deviceId: string, chatId: string, limit: number, before: { createdAt: Date; id: string } | undefined): Promise<MessageRow[]> {
  const keyset = before ? 'AND (m.created_at, m.id) < ($4::timestamptz, $5::text)' : '';
  return db.query<MessageRow>(
    `SELECT m.* FROM messages m WHERE m.device_id = $1 AND COALESCE(m.chat_id, m.peer) = $2 ${keyset}
      ORDER BY m.created_at DESC, m.id DESC LIMIT $3`,
    before ? [deviceId, chatId, limit, before.createdAt, before.id] : [deviceId, chatId, limit],
  );
}

/** Where a message of the device's chat sits in the chat's order (for `before`). */
export async function chatMessagePosition(db: Queryable, deviceId: string, chatId: string, messageId: string): Promise<{ createdAt: Date; id: string } | undefined> {
  const [row] = await db.query<{ created_at: Date; id: string }>(
    'SELECT created_at, id FROM messages WHERE id = $1 AND device_id = $2 AND COALESCE(chat_id, peer) = $3',
    [messageId, deviceId, chatId],
  );
  return row ? { createdAt: row.created_at, id: row.id } : undefined;
}

/**
 * Marks a chat read: its unread count goes to 0. Returns the incoming messages that were unread
 * (the newest `unread_count`, at most `max`), for their read receipts; undefined: no such chat.
 */
export async function markRead(db: Queryable, deviceId: string, chatId: string, max: number): Promise<{ networkMessageId: string; from: string }[] | undefined> {
  const [chat] = await db.query<{ was: number }>(
    `UPDATE chats c SET unread_count = 0 FROM chats o
      WHERE c.device_id = $1 AND c.id = $2 AND o.device_id = c.device_id AND o.id = c.id RETURNING o.unread_count AS was`,
    [deviceId, chatId],
  );
  if (!chat) return undefined;
  if (chat.was === 0) return [];
  const rows = await db.query<{ network_message_id: string; peer: string }>(
    `SELECT network_message_id, peer FROM messages m WHERE m.device_id = $1 AND COALESCE(m.chat_id, m.peer) = $2 AND m.direction = 'in'
      ORDER BY m.created_at DESC, m.id DESC LIMIT $3`,
    [deviceId, chatId, Math.min(chat.was, max)],
  );
  return rows.map((r) => ({ networkMessageId: r.network_message_id, from: r.peer }));
}

/** The messages of these ids (chats' last messages), by id. */
export async function messagesById(db: Queryable, ids: string[]): Promise<Map<string, MessageRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db.query<MessageRow>('SELECT * FROM messages WHERE id = ANY($1::text[])', [ids]);
  return new Map(rows.map((r) => [r.id, r]));
}

/** Appends a chat.presence event for the device's account; false when the device is gone. */
export async function recordPresence(db: Queryable, deviceId: string, presence: Jsonified<ChatPresence>): Promise<boolean> {
  const rows = await db.query(
    `WITH src AS (SELECT d.account_id, 'chat.presence'::text AS type, $2::jsonb AS data FROM devices d WHERE d.id = $1),
     ${appendEventsSql('src')}
     SELECT 1 FROM src`,
    [deviceId, JSON.stringify(presence)],
  );
  return rows.length > 0;
}
