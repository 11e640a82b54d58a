/**
 * The sandbox network's world, kept in the database so that it is one world for every process
 * (API and workers may be separate): the QR codes it has handed out, the phones linked to
 * devices, the messages it has received, and incoming messages waiting to be handed to Waygate.
 *
 * Magic recipients, by their last four digits: 0000 not on the network (permanent failure);
 * 0001 never delivered; 0002 delivered, never read; 0003 a transient failure on the first
 * attempt, then normal.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { Database, Queryable } from '../../platform/database.js';
import type { Bus } from '../../platform/bus.js';
import {
  MESSAGE_WINDOWS,
  type ContactPresenceState,
  type KindFields,
  type MessageType,
  type OutgoingMessage,
  type ParticipantAction,
  type ParticipantOutcome,
  type PresenceState,
  type SendResult,
} from '../network.js';
import { workBudget } from '../../platform/work-budget.js';

export type PhoneState = 'linked' | 'dropped' | 'unlinked';

export interface PhoneRow {
  device_id: string;
  phone_number: string;
  state: PhoneState;
  version: number;
}

/**
 * What a message carries beyond type, content and media, as the sandbox network keeps it (in
 * sandbox_messages and sandbox_incoming): the kind's fields, and replies and reactions by the
 * network id of the message they refer to.
 */
export interface SandboxPayload extends KindFields {
  reaction?: { networkMessageId: string; emoji: string } | undefined;
  replyTo?: string | undefined;
  mentions?: string[] | undefined;
  /** Not a message: what the sender shows in the chat (`group`, else theirs with the device; sandbox_incoming only). */
  presence?: ContactPresenceState | undefined;
  /** Not a message: the sender's vote on a poll of the device (sandbox_incoming only). */
  vote?: { networkMessageId: string; options: string[] } | undefined;
  /** Not a message: the sender edits one of their messages (sandbox_incoming only). */
  edit?: { networkMessageId: string; content: string } | undefined;
  /** Not a message: the sender deletes one of their messages for everyone (sandbox_incoming only). */
  delete?: { networkMessageId: string } | undefined;
  /** An incoming message sent in this group chat (`from` is the member who sent it). */
  group?: string | undefined;
  /** Not a message: the device was added to this group (sandbox_incoming only). */
  groupAdded?: string | undefined;
}

export interface SandboxGroup {
  id: string;
  deviceId: string;
  name: string;
  /** Every member's number, the device's own first (the group's creator, always an admin). */
  members: string[];
  /** Members made admins besides the first. */
  admins: string[];
  createdAt: Date;
}

/** The invite code of a sandbox group: stable until revoked, shaped as WhatsApp's 22 characters. */
const inviteCodeOf = (group: string, version: number): string => `SBX${createHash('sha256').update(`${group}:${version}`).digest('base64url').slice(0, 19)}`;

/** What the sandbox network answers a participants change for one number, or null when it takes it. */
function refusal(group: SandboxGroup, action: ParticipantAction, phone: string): string | null {
  const member = group.members.includes(phone);
  if (action === 'add') {
    if (member) return 'is already a participant';
    return magicEnding(phone) === ENDING.notOnNetwork ? 'is not on the network' : null;
  }
  if (!member) return 'is not a participant';
  if (phone === group.members[0]) return action === 'remove' ? "is the device's own number: leave the group instead" : "is the group's creator, always an admin";
  if (action === 'promote' && group.admins.includes(phone)) return 'is already an admin';
  if (action === 'demote' && !group.admins.includes(phone)) return 'is not an admin';
  return null;
}

/** The payload the network got with a message (null when it carried nothing beyond type and content). */
function payloadOf(message: OutgoingMessage): string | null {
  const payload: SandboxPayload = { ...message.kind };
  if (message.reaction) payload.reaction = { networkMessageId: message.reaction.target.networkMessageId, emoji: message.reaction.emoji };
  if (message.replyTo) payload.replyTo = message.replyTo.networkMessageId;
  if (message.mentions && message.mentions.length > 0) payload.mentions = message.mentions;
  return Object.keys(payload).length > 0 ? JSON.stringify(payload) : null;
}

/** A listing of what the account's devices did on the network: one device's, one chat's. */
export interface DeviceChatFilter {
  deviceId?: string | undefined;
  chat?: string | undefined;
}

/**
 * The rows of `table` (aliased t; it has device_id and chat) of the account's devices within the
 * filter: a FROM … WHERE clause and its parameters ($1 the account).
 */
function ofAccountDevices(table: 'sandbox_reads' | 'sandbox_presence', accountId: string, filter: DeviceChatFilter): { from: string; params: unknown[] } {
  const where = ['d.account_id = $1'];
  const params: unknown[] = [accountId];
  if (filter.deviceId) {
    params.push(filter.deviceId);
    where.push(`t.device_id = $${params.length}`);
  }
  if (filter.chat) {
    params.push(filter.chat);
    where.push(`t.chat = $${params.length}`);
  }
  return { from: `${table} t JOIN devices d ON d.id = t.device_id WHERE ${where.join(' AND ')}`, params };
}

/** The last presence a device showed in a chat, as the sandbox network saw it. */
export interface SandboxPresenceView {
  deviceId: string;
  chat: string;
  state: PresenceState;
  at: Date;
}

/** A read receipt the sandbox network saw from a device. */
export interface SandboxReadView {
  deviceId: string;
  networkMessageId: string;
  /** The sender's number, or a group chat (<digits>@g.us); null for a receipt kept before it was recorded. */
  chat: string | null;
  readAt: Date;
}

export interface SandboxMessageView {
  networkMessageId: string;
  deviceId: string;
  to: string;
  /** A message into a group chat: the members it reached (one copy each; the device's own number is not one). */
  groupMembers: string[] | null;
  type: string;
  content: string;
  payload: SandboxPayload | null;
  editedAt: Date | null;
  deletedAt: Date | null;
  mediaBytes: number | null;
  mediaType: string | null;
  fileName: string | null;
  sendCalls: number;
  delivered: number;
  read: number;
  acceptedAt: Date;
  deliveredAt: Date | null;
  readAt: Date | null;
}

export interface DueReceipt {
  deviceId: string;
  networkMessageId: string;
  status: 'DELIVERED' | 'READ';
  at: Date;
}

export interface IncomingRow {
  seq: number;
  deviceId: string;
  networkMessageId: string;
  from: string;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  payload: SandboxPayload | null;
  createdAt: Date;
}

/**
 * The sandbox's recipients that misbehave, by the last four digits of their number (docs/api.md,
 * Sandbox): every other number takes a message, delivers it and reads it.
 */
export const ENDING = {
  /** Not on the network: a send fails for good (RECIPIENT_NOT_ON_NETWORK), a number check says so. */
  notOnNetwork: '0000',
  /** Takes messages but never delivers them (they stay SENT). */
  neverDelivers: '0001',
  /** Delivers but never reads. */
  neverReads: '0002',
  /** Fails the first hand-over of each message (a transient failure), then behaves. */
  failsFirstSend: '0003',
} as const;

export const magicEnding = (to: string): string => to.slice(-4);

/** The SQL list of these endings, for `right(number, 4) IN …`. */
const endings = (...which: (keyof typeof ENDING)[]): string => `(${which.map((w) => `'${ENDING[w]}'`).join(', ')})`;

/**
 * What the sandbox network takes: one row per message, with the times of its receipts (none for
 * the endings that never deliver or read, nor on a first hand-over that fails); a message handed
 * over again counts the call and gets its receipt times anew. $10 is the receipt delay in ms, $13
 * when the accept started.
 */
const ACCEPT_SQL = `INSERT INTO sandbox_messages AS sm
    (network_message_id, device_id, account_id, "to", type, content, media_bytes, media_type, file_name, payload, accepted_at, deliver_at, read_at)
  SELECT m.nid, m.device_id, m.account_id, m.rcpt, m.type, m.content, m.media_bytes, m.media_type, m.file_name, m.payload::jsonb, m.accepted_at,
    CASE WHEN right(m.rcpt, 4) IN ${endings('neverDelivers', 'failsFirstSend')} THEN NULL ELSE $13::timestamptz + $10 * interval '1 millisecond' END,
    CASE WHEN right(m.rcpt, 4) IN ${endings('neverDelivers', 'neverReads', 'failsFirstSend')} THEN NULL ELSE $13::timestamptz + 2 * $10 * interval '1 millisecond' END
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::text[], $11::text[], $12::timestamptz[])
    AS m(device_id, nid, account_id, rcpt, type, content, media_bytes, media_type, file_name, payload, accepted_at)
  ON CONFLICT (device_id, network_message_id) DO UPDATE SET
    send_calls = sm.send_calls + 1,
    deliver_at = CASE WHEN right(sm."to", 4) IN ${endings('neverDelivers')} THEN NULL
                 WHEN sm.deliver_at IS NULL OR sm.deliver_at < $13 THEN $13::timestamptz + $10 * interval '1 millisecond'
                 ELSE sm.deliver_at END,
    read_at = CASE WHEN right(sm."to", 4) IN ${endings('neverDelivers', 'neverReads')} THEN NULL
              WHEN sm.read_at IS NULL OR sm.read_at < $13 THEN $13::timestamptz + 2 * $10 * interval '1 millisecond'
              ELSE sm.read_at END
  RETURNING device_id, network_message_id, send_calls, "to"`;

function acceptedResult(row: { send_calls: number; to: string } | undefined): SendResult {
  if (row && magicEnding(row.to) === ENDING.failsFirstSend && row.send_calls === 1) {
    return { ok: false, permanent: false, code: 'NETWORK_TEMPORARY_FAILURE', message: 'The network could not take the message this time' };
  }
  return { ok: true };
}

/**
 * How far before a device's stored mark a session that starts reads its receipts again: those of
 * messages another process (the device's previous owner) accepted, whose statement committed
 * late or whose clock ran behind this one's. Receipts read again are handed over again; Waygate
 * applies receipts forward only, so a second one changes nothing.
 */
const MARK_LAG_MS = 10_000;

type ReceiptStatus = DueReceipt['status'];

/**
 * Where a device's next look at one kind of receipt starts: every receipt before it (by time,
 * then network message id) has been handed over. `nid` '' starts at `at` itself.
 */
export interface ReceiptCursor {
  at: Date;
  nid: string;
}

/** A device's cursors, one per kind of receipt. */
export type ReceiptCursors = Record<ReceiptStatus, ReceiptCursor>;

/** One look at the due receipts: what is due, and where each device's cursors stand once it is handed over. */
export interface ReceiptLook {
  receipts: DueReceipt[];
  /** Whether some device had more due than one look takes. */
  full: boolean;
  after: Map<string, ReceiptCursors>;
}

/**
 * This process's clock for receipt times: monotonic (a step of the wall clock neither replays nor
 * skips receipts), in epoch milliseconds.
 */
function receiptClock(): number {
  return Math.floor(performance.timeOrigin + performance.now());
}

export class SandboxWorld {
  /** Devices' receipt cursors while their session runs in this process (absent: read from the stored mark). */
  private readonly cursors = new Map<string, ReceiptCursors>();
  /** When each accept statement of this process in flight started (receiptClock): its receipts are not due before it ends. */
  private readonly accepting = new Map<number, number>();
  private acceptSeq = 0;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly receiptMs: number,
  ) {}

  private wake(deviceId: string): Promise<void> {
    return this.bus.publish('waygate_sandbox', deviceId);
  }

  async issueQr(deviceId: string, ttlMs: number): Promise<{ code: string; expiresAt: Date }> {
    const code = `sandbox-${randomBytes(12).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + ttlMs);
    // Expired codes are kept a while, so that scanning one is answered "expired" (as a real
    // network does), not "unknown"; only long-expired ones are dropped.
    await this.database.query(`DELETE FROM sandbox_qr_codes WHERE device_id = $1 AND expires_at < now() - interval '10 minutes'`, [deviceId]);
    await this.database.query('INSERT INTO sandbox_qr_codes (code, device_id, expires_at) VALUES ($1, $2, $3)', [code, deviceId, expiresAt]);
    return { code, expiresAt };
  }

  /** The device a code was shown for (expired or not), if the network showed it. */
  async qrCodeDevice(code: string): Promise<string | undefined> {
    const [row] = await this.database.query<{ device_id: string }>('SELECT device_id FROM sandbox_qr_codes WHERE code = $1', [code]);
    return row?.device_id;
  }

  /** The phone scans a code: the device it was shown for becomes linked as phoneNumber. */
  async scan(code: string, phoneNumber: string): Promise<{ ok: true; deviceId: string } | { ok: false; reason: 'unknown' | 'expired' }> {
    const [row] = await this.database.query<{ device_id: string; expired: boolean }>(
      'SELECT device_id, expires_at < now() AS expired FROM sandbox_qr_codes WHERE code = $1',
      [code],
    );
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.expired) return { ok: false, reason: 'expired' };
    await this.database.query(
      `INSERT INTO sandbox_phones (device_id, phone_number, state) VALUES ($1, $2, 'linked')
       ON CONFLICT (device_id) DO UPDATE SET phone_number = EXCLUDED.phone_number, state = 'linked',
         changed_at = now(), version = sandbox_phones.version + 1`,
      [row.device_id, phoneNumber],
    );
    await this.database.query('DELETE FROM sandbox_qr_codes WHERE device_id = $1', [row.device_id]);
    await this.wake(row.device_id);
    return { ok: true, deviceId: row.device_id };
  }

  async phones(deviceIds: string[]): Promise<PhoneRow[]> {
    if (deviceIds.length === 0) return [];
    return this.database.query<PhoneRow>(
      'SELECT device_id, phone_number, state, version FROM sandbox_phones WHERE device_id = ANY($1::text[])',
      [deviceIds],
    );
  }

  /**
   * Plays a drop of the connection (`dropped`) or an unlink from the phone (`unlinked`). A held
   * drop outlasts the gateway's reconnect attempts until `restore` ends it.
   */
  async setPhoneState(deviceId: string, state: PhoneState, options: { held?: boolean } = {}): Promise<boolean> {
    const rows = await this.database.query(
      `UPDATE sandbox_phones SET state = $2, held = $3, changed_at = now(), version = version + 1
        WHERE device_id = $1 AND state <> 'unlinked' RETURNING device_id`,
      [deviceId, state, state === 'dropped' && options.held === true],
    );
    if (rows.length > 0) await this.wake(deviceId);
    return rows.length > 0;
  }

  /** A dropped phone comes back when the gateway reconnects, unless the drop is held. */
  async reconnect(deviceId: string): Promise<void> {
    await this.database.query(
      `UPDATE sandbox_phones SET state = 'linked', changed_at = now(), version = version + 1
        WHERE device_id = $1 AND state = 'dropped' AND NOT held`,
      [deviceId],
    );
  }

  /** Ends a drop (held or not): the phone is reachable again and the device's session connects. */
  async restore(deviceId: string): Promise<boolean> {
    const rows = await this.database.query(
      `UPDATE sandbox_phones SET state = 'linked', held = false, changed_at = now(), version = version + 1
        WHERE device_id = $1 AND state = 'dropped' RETURNING device_id`,
      [deviceId],
    );
    if (rows.length > 0) await this.wake(deviceId);
    return rows.length > 0;
  }

  /**
   * Accepts a batch of messages, of any devices, in one statement. A message id seen before from
   * the same device is not delivered again: only its sendCalls grows. The phone acknowledges the
   * resend, though: receipts already due come again after it (a gateway that took the device over
   * from a dead owner resends what that owner left unrecorded, and may have let the first
   * receipts pass while the message was back in its queue). A message's acceptedAt is
   * when its session handed it over (`at`), not when this statement runs: a batch waits for the
   * one before it, and on a busy database a statement may wait longer, which would make paced
   * hand-overs look closer together or further apart than they were.
   */
  async accept(batch: { deviceId: string; message: OutgoingMessage; at: Date }[]): Promise<SendResult[]> {
    const token = ++this.acceptSeq;
    const startedAt = receiptClock();
    this.accepting.set(token, startedAt);
    try {
      return await this.acceptFrom(startedAt, batch);
    } finally {
      this.accepting.delete(token);
    }
  }

  /**
   * accept's statement. Its receipt times are `startedAt` + the receipt delay (twice that to be
   * read): never earlier than the start registered in `accepting`, which is what lets a look at
   * the receipts skip no row that commits after it (see dueReceipts).
   */
  private async acceptFrom(startedAt: number, batch: { deviceId: string; message: OutgoingMessage; at: Date }[]): Promise<SendResult[]> {
    const results: SendResult[] = new Array(batch.length);
    const onNetwork: number[] = [];
    const groupsAsked = new Map<string, string[]>();
    for (const { deviceId, message } of batch) {
      if (message.to.endsWith('@g.us')) groupsAsked.set(deviceId, [...(groupsAsked.get(deviceId) ?? []), message.to]);
    }
    const memberOf = new Set<string>();
    for (const [deviceId, ids] of groupsAsked) {
      for (const group of await this.groups(deviceId, ids)) memberOf.add(`${deviceId} ${group.id}`);
    }
    batch.forEach(({ deviceId, message }, index) => {
      if (message.to.endsWith('@g.us') && !memberOf.has(`${deviceId} ${message.to}`)) {
        results[index] = { ok: false, permanent: true, code: 'NOT_A_GROUP_MEMBER', message: `The device is not in the group ${message.to}` };
      } else if (magicEnding(message.to) === ENDING.notOnNetwork) {
        results[index] = { ok: false, permanent: true, code: 'RECIPIENT_NOT_ON_NETWORK', message: `${message.to} is not on the network` };
      } else {
        onNetwork.push(index);
      }
    });
    if (onNetwork.length === 0) return results;
    const pick = <T>(f: (m: OutgoingMessage) => T): T[] => onNetwork.map((i) => f(batch[i]!.message));
    const rows = await this.database.queryPrepared<{ device_id: string; network_message_id: string; send_calls: number; to: string }>({
      // Planned once (an insert: nothing to go stale); small batches of direct sends paid more to plan it than to run it.
      name: 'sandbox_accept',
      genericPlan: true,
      text: ACCEPT_SQL,
      values: [
        onNetwork.map((i) => batch[i]!.deviceId),
        pick((m) => m.networkMessageId),
        pick((m) => m.accountId),
        pick((m) => m.to),
        pick((m) => m.type),
        pick((m) => m.content),
        pick((m) => m.media?.data.length ?? null),
        pick((m) => m.media?.mimeType ?? null),
        pick((m) => m.media?.fileName ?? null),
        this.receiptMs,
        pick(payloadOf),
        onNetwork.map((i) => batch[i]!.at),
        new Date(startedAt),
      ],
    });
    const calls = new Map(rows.map((row) => [`${row.device_id} ${row.network_message_id}`, row]));
    for (const index of onNetwork) results[index] = acceptedResult(calls.get(`${batch[index]!.deviceId} ${batch[index]!.message.networkMessageId}`));
    return results;
  }

  /** Receipts of each kind a device's look takes at most (dueReceipts). */
  private get receiptBatch(): number {
    return workBudget(this.database).receiptBatch;
  }

  /**
   * The receipts whose time has come and that were not handed over yet, oldest first, at most
   * `limit` of each kind per device, read from each device's cursors (the index range past them:
   * no row is read twice while the session runs here). A look stops short of the receipt times
   * of this process's accepts still in flight (not committed yet, so not visible to it), which is
   * why no row can commit behind a cursor and nothing handed over needs flagging. Handing over
   * is confirmed with markReceipts, which moves the cursors to `after`.
   */
  async dueReceipts(deviceIds: string[], limit = this.receiptBatch): Promise<ReceiptLook> {
    if (deviceIds.length === 0) return { receipts: [], full: false, after: new Map() };
    const now = receiptClock();
    const oldestAccept = Math.min(...this.accepting.values());
    const until: Record<ReceiptStatus, Date> = {
      DELIVERED: new Date(Math.min(now, oldestAccept + this.receiptMs)),
      READ: new Date(Math.min(now, oldestAccept + 2 * this.receiptMs)),
    };
    const from = deviceIds.map((id) => this.cursors.get(id));
    const rows = await this.database.query<{ device_id: string; network_message_id: string; status: ReceiptStatus; at: Date }>(
      `SELECT r.* FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::timestamptz[], $5::text[]) AS d(id, d_at, d_nid, r_at, r_nid)
         LEFT JOIN sandbox_phones p ON p.device_id = d.id
         CROSS JOIN LATERAL (
           (SELECT device_id, network_message_id, 'DELIVERED' AS status, deliver_at AS at FROM sandbox_messages
             WHERE device_id = d.id AND deliver_at < $6
               AND (deliver_at, network_message_id) > (COALESCE(d.d_at, p.delivered_mark - $9 * interval '1 millisecond', '-infinity'), COALESCE(d.d_nid, ''))
             ORDER BY deliver_at, network_message_id LIMIT $8)
           UNION ALL
           (SELECT device_id, network_message_id, 'READ' AS status, read_at AS at FROM sandbox_messages
             WHERE device_id = d.id AND read_at < $7
               AND (read_at, network_message_id) > (COALESCE(d.r_at, p.read_mark - $9 * interval '1 millisecond', '-infinity'), COALESCE(d.r_nid, ''))
             ORDER BY read_at, network_message_id LIMIT $8)) AS r`,
      [
        deviceIds,
        from.map((c) => c?.DELIVERED.at ?? null),
        from.map((c) => c?.DELIVERED.nid ?? null),
        from.map((c) => c?.READ.at ?? null),
        from.map((c) => c?.READ.nid ?? null),
        until.DELIVERED,
        until.READ,
        limit,
        MARK_LAG_MS,
      ],
    );
    const receipts = rows.map((r) => ({ deviceId: r.device_id, networkMessageId: r.network_message_id, status: r.status, at: r.at }));
    // A kind that filled its batch continues after its last receipt (rows come in cursor order);
    // one that did not, at the look's end.
    const taken = new Map<string, { count: number; last: DueReceipt }>();
    for (const receipt of receipts) {
      const key = `${receipt.deviceId} ${receipt.status}`;
      taken.set(key, { count: (taken.get(key)?.count ?? 0) + 1, last: receipt });
    }
    let full = false;
    const after = new Map<string, ReceiptCursors>();
    for (const deviceId of deviceIds) {
      const cursorOf = (status: ReceiptStatus): ReceiptCursor => {
        const kind = taken.get(`${deviceId} ${status}`);
        if (!kind || kind.count < limit) return { at: until[status], nid: '' };
        full = true;
        return { at: kind.last.at, nid: kind.last.networkMessageId };
      };
      after.set(deviceId, { DELIVERED: cursorOf('DELIVERED'), READ: cursorOf('READ') });
    }
    return { receipts, full, after };
  }

  /**
   * Confirms a look's receipts of `deviceIds` as handed over: their cursors move to the look's
   * `after`, and the stored marks (where a session that starts elsewhere reads from, less
   * MARK_LAG_MS) of those that had receipts follow.
   */
  async markReceipts(look: ReceiptLook, deviceIds: string[]): Promise<void> {
    const moved: string[] = [];
    const handed = new Set(look.receipts.map((r) => r.deviceId));
    for (const deviceId of deviceIds) {
      const after = look.after.get(deviceId);
      if (!after) continue;
      this.cursors.set(deviceId, after);
      if (handed.has(deviceId)) moved.push(deviceId);
    }
    if (moved.length === 0) return;
    await this.database.query(
      `UPDATE sandbox_phones p SET delivered_mark = GREATEST(COALESCE(p.delivered_mark, '-infinity'), m.delivered),
                                   read_mark = GREATEST(COALESCE(p.read_mark, '-infinity'), m.read)
         FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS m(device_id, delivered, read)
        WHERE p.device_id = m.device_id`,
      [moved, moved.map((id) => this.cursors.get(id)!.DELIVERED.at), moved.map((id) => this.cursors.get(id)!.READ.at)],
    );
  }

  /** The device's session ended here: a session that starts again reads from the stored mark. */
  forgetReceipts(deviceId: string): void {
    this.cursors.delete(deviceId);
  }

  /**
   * The device edits (new `content`) or deletes for everyone a message the network took from it,
   * within the network's windows (MESSAGE_WINDOWS, from when it was first accepted). Refused for
   * good when the network does not have it, it was deleted, or the window has passed.
   */
  async changeSent(deviceId: string, networkMessageId: string, change: { content: string } | { delete: true }): Promise<SendResult> {
    const editing = 'content' in change;
    const windowMs = editing ? MESSAGE_WINDOWS.editMs : MESSAGE_WINDOWS.deleteMs;
    const [row] = await this.database.query<{ in_window: boolean; deleted: boolean; changed: boolean }>(
      `WITH sm AS (SELECT accepted_at >= now() - $3 * interval '1 millisecond' AS in_window, deleted_at IS NOT NULL AS deleted
                     FROM sandbox_messages WHERE device_id = $1 AND network_message_id = $2),
       upd AS (UPDATE sandbox_messages SET ${editing ? 'content = $4::text, edited_at = now()' : 'content = COALESCE($4::text, content), deleted_at = now()'}
                WHERE device_id = $1 AND network_message_id = $2 AND deleted_at IS NULL AND accepted_at >= now() - $3 * interval '1 millisecond'
               RETURNING 1)
       SELECT sm.in_window, sm.deleted, EXISTS (SELECT 1 FROM upd) AS changed FROM sm`,
      [deviceId, networkMessageId, windowMs, editing ? change.content : null],
    );
    if (row?.changed) return { ok: true };
    const code = editing ? 'NOT_EDITABLE' : 'NOT_DELETABLE';
    if (!row) return { ok: false, permanent: true, code, message: 'The network has no such message from this device' };
    if (row.deleted) return { ok: false, permanent: true, code, message: 'The message was deleted for everyone' };
    return { ok: false, permanent: true, code, message: `The network's window to ${editing ? 'edit' : 'delete'} the message has passed` };
  }

  /** The device's read receipts for messages it received in `chat` (each kept once, the first). */
  async markRead(deviceId: string, networkMessageIds: string[], chat: string): Promise<void> {
    await this.database.query(
      `INSERT INTO sandbox_reads (device_id, network_message_id, chat) SELECT $1, id, $3 FROM unnest($2::text[]) AS id
       ON CONFLICT (device_id, network_message_id) DO NOTHING`,
      [deviceId, networkMessageIds, chat],
    );
  }

  /** The presence the device shows in `chat` now (the last one sent). */
  async showPresence(deviceId: string, chat: string, state: PresenceState): Promise<void> {
    await this.database.query(
      `INSERT INTO sandbox_presence (device_id, chat, state) VALUES ($1, $2, $3)
       ON CONFLICT (device_id, chat) DO UPDATE SET state = EXCLUDED.state, at = now()`,
      [deviceId, chat, state],
    );
  }

  /** The last presence each of the account's devices showed in each chat, newest first. */
  async listPresence(accountId: string, filter: DeviceChatFilter, limit: number, offset: number): Promise<{ total: number; items: SandboxPresenceView[] }> {
    const { from, params } = ofAccountDevices('sandbox_presence', accountId, filter);
    const [count] = await this.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${from}`, params);
    const rows = await this.database.query<{ device_id: string; chat: string; state: PresenceState; at: Date }>(
      `SELECT t.device_id, t.chat, t.state, t.at FROM ${from} ORDER BY t.at DESC, t.chat LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, limit, offset],
    );
    return { total: count?.n ?? 0, items: rows.map((r) => ({ deviceId: r.device_id, chat: r.chat, state: r.state, at: r.at })) };
  }

  /** The read receipts the account's devices sent, newest first. */
  async listReads(accountId: string, filter: DeviceChatFilter, limit: number, offset: number): Promise<{ total: number; items: SandboxReadView[] }> {
    const { from, params } = ofAccountDevices('sandbox_reads', accountId, filter);
    const [count] = await this.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${from}`, params);
    const rows = await this.database.query<{ device_id: string; network_message_id: string; chat: string | null; read_at: Date }>(
      `SELECT t.device_id, t.network_message_id, t.chat, t.read_at FROM ${from} ORDER BY t.read_at DESC, t.network_message_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, limit, offset],
    );
    return {
      total: count?.n ?? 0,
      items: rows.map((r) => ({ deviceId: r.device_id, networkMessageId: r.network_message_id, chat: r.chat, readAt: r.read_at })),
    };
  }


  /**
   * Creates a WhatsApp group the device's number is in, with these other members; the device's
   * session hears of it like a real network's group notification. Group ids look like WhatsApp's.
   */
  async createGroup(input: { accountId: string; deviceId: string; ownNumber: string; name: string; members: string[] }): Promise<SandboxGroup> {
    const id = `120363${Array.from({ length: 12 }, () => randomInt(10)).join('')}@g.us`;
    const members = [input.ownNumber, ...input.members.filter((m) => m !== input.ownNumber)];
    const [row] = await this.database.query<{ created_at: Date }>(
      'INSERT INTO sandbox_groups (id, device_id, account_id, name, members) VALUES ($1, $2, $3, $4, $5) RETURNING created_at',
      [id, input.deviceId, input.accountId, input.name, members],
    );
    await this.database.query('INSERT INTO sandbox_incoming (device_id, network_message_id, "from", type, content, payload) VALUES ($1, $2, $3, $4, $5, $6::jsonb)', [
      input.deviceId,
      `SBXGROUP${randomBytes(8).toString('hex').toUpperCase()}`,
      input.ownNumber,
      'TEXT',
      '',
      JSON.stringify({ groupAdded: id }),
    ]);
    await this.wake(input.deviceId);
    return { id, deviceId: input.deviceId, name: input.name, members, admins: [], createdAt: row!.created_at };
  }

  /** The device's groups (all of them, or these ids). */
  async groups(deviceId: string, ids?: string[]): Promise<SandboxGroup[]> {
    return this.readGroups(this.database, deviceId, ids ?? null, false);
  }

  private async readGroups(db: Queryable, deviceId: string, ids: string[] | null, lock: boolean): Promise<SandboxGroup[]> {
    const rows = await db.query<{ id: string; device_id: string; name: string; members: string[]; admins: string[]; created_at: Date }>(
      `SELECT id, device_id, name, members, admins, created_at FROM sandbox_groups
        WHERE device_id = $1 AND ($2::text[] IS NULL OR id = ANY($2::text[])) ORDER BY created_at, id${lock ? ' FOR UPDATE' : ''}`,
      [deviceId, ids],
    );
    return rows.map((r) => ({ id: r.id, deviceId: r.device_id, name: r.name, members: r.members, admins: r.admins, createdAt: r.created_at }));
  }

  /** A group the device is in, locked for a change; null when it is not in it. */
  private async lockedGroup(db: Queryable, deviceId: string, group: string): Promise<SandboxGroup | null> {
    const [found] = await this.readGroups(db, deviceId, [group], true);
    return found ?? null;
  }

  /** Renames a group of the device; false when the device is not in it. */
  async renameGroup(deviceId: string, group: string, name: string): Promise<boolean> {
    const rows = await this.database.query('UPDATE sandbox_groups SET name = $3 WHERE device_id = $1 AND id = $2 RETURNING 1', [deviceId, group, name]);
    return rows.length > 0;
  }

  /**
   * Adds, removes, promotes or demotes members of a group of the device, each number on its own
   * (as WhatsApp answers them); null when the device is not in the group.
   */
  async changeMembers(deviceId: string, group: string, action: ParticipantAction, phones: string[]): Promise<ParticipantOutcome[] | null> {
    return this.database.transaction(async (tx) => {
      const found = await this.lockedGroup(tx, deviceId, group);
      if (!found) return null;
      const outcomes = phones.map((phoneNumber): ParticipantOutcome => {
        const reason = refusal(found, action, phoneNumber);
        if (reason !== null) return { phoneNumber, ok: false, reason };
        const without = (list: string[]): string[] => list.filter((member) => member !== phoneNumber);
        switch (action) {
          case 'add':
            found.members.push(phoneNumber);
            break;
          case 'remove':
            found.members = without(found.members);
            found.admins = without(found.admins);
            break;
          case 'promote':
            found.admins.push(phoneNumber);
            break;
          case 'demote':
            found.admins = without(found.admins);
            break;
        }
        return { phoneNumber, ok: true, reason: null };
      });
      await tx.query('UPDATE sandbox_groups SET members = $3, admins = $4 WHERE device_id = $1 AND id = $2', [deviceId, group, found.members, found.admins]);
      return outcomes;
    });
  }

  /** The invite code of a group of the device (a new one with `revoke`); null when it is not in it. */
  async inviteCode(deviceId: string, group: string, revoke = false): Promise<string | null> {
    const [row] = await this.database.query<{ invite_version: number }>(
      revoke
        ? 'UPDATE sandbox_groups SET invite_version = invite_version + 1 WHERE device_id = $1 AND id = $2 RETURNING invite_version'
        : 'SELECT invite_version FROM sandbox_groups WHERE device_id = $1 AND id = $2',
      [deviceId, group],
    );
    return row ? inviteCodeOf(group, row.invite_version) : null;
  }

  /** The device's number leaves a group (the sandbox forgets the group); false when it was not in it. */
  async leaveGroup(deviceId: string, group: string): Promise<boolean> {
    const rows = await this.database.query('DELETE FROM sandbox_groups WHERE device_id = $1 AND id = $2 RETURNING 1', [deviceId, group]);
    return rows.length > 0;
  }

  async addIncoming(input: { deviceId: string; from: string; type: MessageType; content: string; mediaUrl?: string | undefined; payload?: SandboxPayload | undefined }): Promise<string> {
    const networkMessageId = `SBX${randomBytes(10).toString('hex').toUpperCase()}`;
    const payload = input.payload && Object.keys(input.payload).length > 0 ? JSON.stringify(input.payload) : null;
    await this.database.query(
      'INSERT INTO sandbox_incoming (device_id, network_message_id, "from", type, content, media_url, payload) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)',
      [input.deviceId, networkMessageId, input.from, input.type, input.content, input.mediaUrl ?? null, payload],
    );
    await this.wake(input.deviceId);
    return networkMessageId;
  }

  /** Incoming messages not yet acknowledged, oldest first, but those in `handing` (being handed over now). */
  async pendingIncoming(deviceIds: string[], handing: number[] = [], limit = 100): Promise<IncomingRow[]> {
    if (deviceIds.length === 0) return [];
    const rows = await this.database.query<{
      seq: number;
      device_id: string;
      network_message_id: string;
      from: string;
      type: MessageType;
      content: string;
      media_url: string | null;
      payload: SandboxPayload | null;
      created_at: Date;
    }>('SELECT * FROM sandbox_incoming WHERE device_id = ANY($1::text[]) AND seq <> ALL($3::bigint[]) ORDER BY seq LIMIT $2', [deviceIds, limit, handing]);
    return rows.map((r) => ({
      seq: Number(r.seq),
      deviceId: r.device_id,
      networkMessageId: r.network_message_id,
      from: r.from,
      type: r.type,
      content: r.content,
      mediaUrl: r.media_url,
      payload: r.payload,
      createdAt: r.created_at,
    }));
  }

  /** The network's acknowledgement of an incoming message: it is not handed over again. */
  async ackIncoming(seq: number): Promise<void> {
    await this.database.query('DELETE FROM sandbox_incoming WHERE seq = $1', [seq]);
  }

  async listMessages(accountId: string, filter: { to?: string | undefined; deviceId?: string | undefined }, limit: number, offset: number): Promise<{ total: number; items: SandboxMessageView[] }> {
    const where = ['account_id = $1'];
    const params: unknown[] = [accountId];
    if (filter.to) {
      params.push(filter.to);
      where.push(`("to" = $${params.length} OR "to" IN (SELECT g.id FROM sandbox_groups g WHERE g.account_id = $1 AND $${params.length} = ANY(g.members[2:])))`);
    }
    if (filter.deviceId) {
      params.push(filter.deviceId);
      where.push(`device_id = $${params.length}`);
    }
    const [count] = await this.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM sandbox_messages WHERE ${where.join(' AND ')}`, params);
    const rows = await this.database.query<Record<string, unknown>>(
      `SELECT *, (deliver_at IS NOT NULL AND deliver_at <= now())::int AS phone_has,
              (read_at IS NOT NULL AND read_at <= now())::int AS phone_read,
              (SELECT g.members[2:] FROM sandbox_groups g WHERE g.id = sandbox_messages."to") AS group_members
         FROM sandbox_messages WHERE ${where.join(' AND ')} ORDER BY accepted_at, network_message_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, limit, offset],
    );
    return {
      total: count?.n ?? 0,
      items: rows.map((r) => ({
        networkMessageId: r.network_message_id as string,
        deviceId: r.device_id as string,
        to: r.to as string,
        groupMembers: (r.group_members as string[] | null) ?? null,
        type: r.type as string,
        content: r.content as string,
        payload: (r.payload as SandboxPayload | null) ?? null,
        editedAt: (r.edited_at as Date | null) ?? null,
        deletedAt: (r.deleted_at as Date | null) ?? null,
        mediaBytes: r.media_bytes as number | null,
        mediaType: r.media_type as string | null,
        fileName: r.file_name as string | null,
        sendCalls: r.send_calls as number,
        delivered: r.phone_has as number,
        read: r.phone_read as number,
        acceptedAt: r.accepted_at as Date,
        deliveredAt: r.phone_has ? (r.deliver_at as Date) : null,
        readAt: r.phone_read ? (r.read_at as Date) : null,
      })),
    };
  }
}
