/**
 * Sending: POST /messages/send and the message records. 1–10 recipients and no groups is a
 * direct send that waits for the network's acknowledgement; more recipients, or any group, is
 * a bulk job whose recipients are frozen at acceptance and fanned out into messages by a worker.
 */
import type { Bus } from '../platform/bus.js';
import type { Database, Queryable } from '../platform/database.js';
import { BatchPump } from '../platform/batch-pump.js';
import { AppError, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { messageTransitions } from '../platform/metrics.js';
import type { MessageType } from '../network/network.js';
import type { AckWaiter } from './ack-waiter.js';
import type { Lister, Listing, ListingRequest } from '../platform/listing.js';
import {
  BULK_JOB_COLUMNS,
  MESSAGE_TYPES,
  networkMessageIdFor,
  toBulkJob,
  toMessage,
  type BulkJobRow,
  type Message,
  type MessageRow,
  type MessageStatus,
} from './message-model.js';
import { appendEvents } from '../events/event-store.js';
import { cancelMessages, completeJobs, type ClaimedMessage } from './message-queue.js';
import { normalizePhone } from '../platform/phone.js';
import { quotaExceeded, refundQuota, reserveQuota } from './quota.js';

export const DIRECT_SEND_MAX = 10;
export const MAX_TEXT_LENGTH = 4096;
export const MAX_CAPTION_LENGTH = 1024;
const PAST_TOLERANCE_MS = 60_000;
const MAX_AHEAD_MS = 365 * 24 * 3600 * 1000;
const TIMEZONE = /(Z|[+-]\d{2}:?\d{2})$/i;

export interface SendInput {
  type: string;
  content: string;
  mediaUrl?: string | undefined;
  recipients?: string[] | undefined;
  to?: string | string[] | undefined;
  groupIds?: string[] | undefined;
  caption?: string | undefined;
  scheduledAt?: string | undefined;
  deviceId?: string | undefined;
}

export interface ValidSend {
  type: MessageType;
  /** Text for TEXT; the caption for media. */
  content: string;
  mediaUrl: string | null;
  recipients: string[];
  groupIds: string[];
  scheduledAt: Date | null;
  deviceId: string | undefined;
}

export type SendResponse =
  | { statusCode: 200 | 202; body: { success: true; message: Message; messages: Message[]; async: boolean } }
  | { statusCode: 202; body: { success: true; jobId: string; status: 'PROCESSING' | 'SCHEDULED'; message: string; totalContacts: number } };

/** Checks every rule of the send body and reports every broken one at once. */
export function validateSend(input: SendInput, now: Date = new Date()): ValidSend {
  const errors: FieldError[] = [];
  const type = input.type.toUpperCase() as MessageType;
  if (!MESSAGE_TYPES.includes(type)) errors.push({ field: 'type', message: 'must be one of TEXT, IMAGE, VIDEO, DOCUMENT' });
  const isMedia = type !== 'TEXT';

  let content = input.content;
  if (type === 'TEXT') {
    if (content.trim().length === 0) errors.push({ field: 'content', message: 'must not be empty for a TEXT message' });
    if (content.length > MAX_TEXT_LENGTH) errors.push({ field: 'content', message: `must have at most ${MAX_TEXT_LENGTH} characters` });
    if (input.caption !== undefined) errors.push({ field: 'caption', message: 'is only for media messages (IMAGE, VIDEO, DOCUMENT)' });
  } else {
    content = input.caption ?? input.content;
    if (content.length > MAX_CAPTION_LENGTH) errors.push({ field: input.caption !== undefined ? 'caption' : 'content', message: `a caption may have at most ${MAX_CAPTION_LENGTH} characters` });
  }

  let mediaUrl: string | null = null;
  if (isMedia) {
    if (!input.mediaUrl) errors.push({ field: 'mediaUrl', message: `is required for ${type} messages` });
    else {
      try {
        const url = new URL(input.mediaUrl);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
        mediaUrl = url.toString();
      } catch {
        errors.push({ field: 'mediaUrl', message: 'must be an http(s) URL' });
      }
    }
  } else if (input.mediaUrl !== undefined) {
    errors.push({ field: 'mediaUrl', message: 'is not allowed for TEXT messages' });
  }

  const recipients: string[] = [];
  const seen = new Set<string>();
  const addRecipients = (list: string[], field: string): void => {
    list.forEach((raw, index) => {
      const phone = normalizePhone(raw);
      if (!phone.ok) {
        if (errors.length < 100) errors.push({ field: `${field}[${index}]`, message: phone.message });
        return;
      }
      if (!seen.has(phone.digits)) {
        seen.add(phone.digits);
        recipients.push(phone.digits);
      }
    });
  };
  if (input.recipients) addRecipients(input.recipients, 'recipients');
  if (input.to !== undefined) {
    if (typeof input.to === 'string') {
      const phone = normalizePhone(input.to);
      if (!phone.ok) errors.push({ field: 'to', message: phone.message });
      else if (!seen.has(phone.digits)) {
        seen.add(phone.digits);
        recipients.push(phone.digits);
      }
    } else addRecipients(input.to, 'to');
  }
  const groupIds = [...new Set(input.groupIds ?? [])];
  const given = (input.recipients?.length ?? 0) + (input.to === undefined ? 0 : typeof input.to === 'string' ? 1 : input.to.length) + groupIds.length;
  if (given === 0) errors.push({ field: 'recipients', message: 'give at least one of recipients (or to) and groupIds' });

  let scheduledAt: Date | null = null;
  if (input.scheduledAt !== undefined) {
    const parsed = new Date(input.scheduledAt);
    if (!TIMEZONE.test(input.scheduledAt) || Number.isNaN(parsed.getTime())) {
      errors.push({ field: 'scheduledAt', message: 'must be an ISO 8601 date-time with a timezone, e.g. 2026-12-01T09:00:00Z' });
    } else if (parsed.getTime() < now.getTime() - PAST_TOLERANCE_MS) {
      errors.push({ field: 'scheduledAt', message: 'is more than 60 seconds in the past' });
    } else if (parsed.getTime() > now.getTime() + MAX_AHEAD_MS) {
      errors.push({ field: 'scheduledAt', message: 'is more than 365 days ahead' });
    } else scheduledAt = parsed;
  }

  if (errors.length > 0) {
    const first = errors[0]!;
    throw new AppError('VALIDATION_ERROR', `${first.field} ${first.message}`, errors);
  }
  return { type, content, mediaUrl, recipients, groupIds, scheduledAt, deviceId: input.deviceId };
}

/** A direct send to accept: its messages' ids, recipients and network ids, index by index. */
interface AcceptRequest {
  accountId: string;
  deviceId: string | null;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  status: MessageStatus;
  dueAt: Date;
  scheduledAt: Date | null;
  ids: string[];
  recipients: string[];
  nids: string[];
  now: Date;
  local: boolean;
}

interface PendingAccept {
  request: AcceptRequest;
  resolve(row: AcceptRow | undefined): void;
  reject(error: unknown): void;
}

interface AcceptRow {
  device_id: string | null;
  device_connected: boolean | null;
  inserted: number;
  taken: boolean | null;
  period_start: Date;
  period_end: Date;
  quota: number | null;
}

/** Accept statements in flight at once, and direct sends per statement. */
const ACCEPT_PIPELINES = 2;
const ACCEPT_BATCH_MAX = 200;

/**
 * Accepts direct sends, one or many, in one statement (so one commit, one WAL flush): each
 * request's device, each account's quota reserved once for all its sends in the batch, every
 * message inserted. A request without a device, or whose account's reservation did not hold for
 * the batch's total, gets reserved = false and nothing written; in a batch of several, the
 * caller retries it alone for its own answer.
 */
const ACCEPT_BATCH_SQL = `WITH r AS (
    SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[], $11::bool[])
      AS r(idx, account_id, device_req, n, type, content, media_url, status, due_at, scheduled_at, local_ok)),
  a AS (
    SELECT ac.id AS account_id, p.message_quota AS quota, w.period_start, w.period_end
      FROM accounts ac JOIN plans p ON p.id = ac.plan_id, waygate_period(ac.plan_started_at, p.period, $12) AS w
     WHERE ac.id IN (SELECT account_id FROM r)),
  d AS (
    SELECT r.idx, r.account_id, r.n, dv.id AS device_id, dv.status, (r.local_ok AND dv.id = ANY($13::text[])) AS local
      FROM r CROSS JOIN LATERAL (
        SELECT id, status FROM devices
         WHERE account_id = r.account_id AND removed_at IS NULL AND status IN ('CONNECTED', 'DISCONNECTED') AND (r.device_req IS NULL OR id = r.device_req)
         ORDER BY (status = 'CONNECTED') DESC, created_at, id LIMIT 1) AS dv),
  need AS (SELECT account_id, sum(n)::int AS n FROM d GROUP BY account_id),
  u AS (
    INSERT INTO usage_periods AS u (account_id, period_start, shard, messages_used)
    SELECT need.account_id, a.period_start, CASE WHEN a.quota IS NULL THEN 1 + pg_backend_pid() % 63 ELSE 0 END, need.n
      FROM need JOIN a ON a.account_id = need.account_id
     WHERE a.quota IS NULL
        OR need.n + COALESCE((SELECT sum(messages_used) FROM usage_periods x
                               WHERE x.account_id = need.account_id AND x.period_start = a.period_start AND x.shard <> 0), 0) <= a.quota
    ON CONFLICT (account_id, period_start, shard) DO UPDATE SET messages_used = u.messages_used + EXCLUDED.messages_used
     WHERE (SELECT quota FROM a WHERE a.account_id = u.account_id) IS NULL
        OR u.messages_used + EXCLUDED.messages_used
           + COALESCE((SELECT sum(messages_used) FROM usage_periods x
                        WHERE x.account_id = u.account_id AND x.period_start = u.period_start AND x.shard <> 0), 0)
           <= (SELECT quota FROM a WHERE a.account_id = u.account_id)
    RETURNING u.account_id, u.period_start),
  ins AS (
    INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, media_url, status, priority, due_at,
                          network_message_id, quota_period_start, scheduled_at, queued_at, claimed_by, attempts)
    SELECT m.id, d.account_id, d.device_id, 'out', m.peer, r.type, r.content, r.media_url, CASE WHEN d.local THEN 'SENDING' ELSE r.status END, 0,
           CASE WHEN d.local THEN NULL ELSE r.due_at END, m.nid, u.period_start, r.scheduled_at, CASE WHEN r.status = 'QUEUED' THEN now() END,
           CASE WHEN d.local THEN $14 END, CASE WHEN d.local THEN 1 ELSE 0 END
      FROM unnest($15::int[], $16::text[], $17::text[], $18::text[]) AS m(idx, id, peer, nid)
      JOIN r ON r.idx = m.idx JOIN d ON d.idx = m.idx JOIN u ON u.account_id = d.account_id
    RETURNING 1)
  SELECT r.idx, d.device_id, d.status = 'CONNECTED' AS device_connected, d.local AS taken, (u.account_id IS NOT NULL) AS reserved,
         a.period_start, a.period_end, a.quota
    FROM r LEFT JOIN d ON d.idx = r.idx LEFT JOIN a ON a.account_id = r.account_id LEFT JOIN u ON u.account_id = r.account_id`;

/**
 * The worker in this process (role all), as the API sees it: direct sends for a device it holds
 * and has connected are inserted already claimed by it and handed over at once, with no claim
 * round and no wait for a dispatch loop. With separate api and worker processes there is none.
 */
export interface DirectSendHost {
  readonly workerId: string;
  /** Devices whose lease this process holds and whose session is connected now. */
  directDevices(): string[];
  /** Sends messages inserted as SENDING, claimed by workerId (put back in the queue if the device left meanwhile). */
  handOver(deviceId: string, messages: ClaimedMessage[]): void;
}

export class MessageService {
  /** Set by the server when a worker runs in this process. */
  directHost: DirectSendHost | undefined;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly acks: AckWaiter,
    private readonly sendWaitMs: number,
    private readonly lister: Lister,
  ) {}

  /** The device to send from: the one asked for, else the oldest CONNECTED one, else a linked but momentarily disconnected one. */
  private async resolveDevice(tx: Queryable, accountId: string, deviceId: string | undefined): Promise<string> {
    if (deviceId) {
      const [device] = await tx.query<{ status: string; removed: boolean }>(
        'SELECT status, removed_at IS NOT NULL AS removed FROM devices WHERE id = $1 AND account_id = $2',
        [deviceId, accountId],
      );
      if (!device || device.removed) throw new AppError('NOT_FOUND', 'Device not found');
      if (device.status !== 'CONNECTED' && device.status !== 'DISCONNECTED') {
        throw new AppError('NO_CONNECTED_DEVICE', `Device ${deviceId} is ${device.status}; link it by scanning its QR code first`);
      }
      return deviceId;
    }
    const [device] = await tx.query<{ id: string }>(
      `SELECT id FROM devices WHERE account_id = $1 AND removed_at IS NULL AND status IN ('CONNECTED', 'DISCONNECTED')
        ORDER BY (status = 'CONNECTED') DESC, created_at, id LIMIT 1`,
      [accountId],
    );
    if (!device) throw new AppError('NO_CONNECTED_DEVICE', 'No linked device: add one with POST /devices and scan its QR code');
    return device.id;
  }

  async send(accountId: string, input: SendInput, now: Date = new Date()): Promise<SendResponse> {
    const valid = validateSend(input, now);
    const scheduled = valid.scheduledAt !== null && valid.scheduledAt.getTime() > now.getTime();
    if (valid.groupIds.length === 0 && valid.recipients.length <= DIRECT_SEND_MAX) return this.sendDirect(accountId, valid, scheduled, now);
    return this.createBulkJob(accountId, valid, scheduled, now);
  }

  private readonly accepts = new BatchPump<PendingAccept>((batch) => this.acceptBatch(batch), { maxInFlight: ACCEPT_PIPELINES, maxBatch: ACCEPT_BATCH_MAX });

  /** Accepts a direct send: in one statement with the others that arrive meanwhile. */
  private accept(request: AcceptRequest): Promise<AcceptRow | undefined> {
    return new Promise((resolve, reject) => this.accepts.push({ request, resolve, reject }));
  }

  private async acceptBatch(batch: PendingAccept[]): Promise<void> {
    let rows: (AcceptRow | undefined)[] | undefined;
    try {
      rows = await this.acceptStatement(batch.map((b) => b.request));
    } catch (error) {
      // Nothing of the batch was written (one statement): one alone fails; several are tried alone.
      if (batch.length === 1) return batch[0]!.reject(error);
    }
    for (const [idx, { request, resolve, reject }] of batch.entries()) {
      const row = rows?.[idx];
      // Taken, or the exact answer for a request that was alone. Otherwise (no device, or its
      // account's quota did not cover the batch's sends together) it is tried alone.
      if (row?.inserted || batch.length === 1) resolve(row);
      else await this.acceptStatement([request]).then(([alone]) => resolve(alone), reject);
    }
  }

  /** Runs ACCEPT_BATCH_SQL; by request: its row (inserted 0 when nothing was written), or undefined for an unknown account. */
  private async acceptStatement(requests: AcceptRequest[]): Promise<(AcceptRow | undefined)[]> {
    const messages = requests.flatMap((r, idx) => r.ids.map((id, i) => ({ idx, id, peer: r.recipients[i]!, nid: r.nids[i]! })));
    const rows = await this.database.queryPrepared<Omit<AcceptRow, 'inserted'> & { idx: number; reserved: boolean }>({
      // Named and planned once per connection: planning took longer than running it (~1-4 ms
      // against 0.6 ms). Key lookups and inserts only, so safe to plan once (PreparedStatement.genericPlan).
      name: 'messages_accept',
      text: ACCEPT_BATCH_SQL,
      genericPlan: true,
      values: [
        requests.map((_, idx) => idx),
        requests.map((r) => r.accountId),
        requests.map((r) => r.deviceId),
        requests.map((r) => r.ids.length),
        requests.map((r) => r.type),
        requests.map((r) => r.content),
        requests.map((r) => r.mediaUrl),
        requests.map((r) => r.status),
        requests.map((r) => r.dueAt),
        requests.map((r) => r.scheduledAt),
        requests.map((r) => r.local),
        requests[0]!.now,
        this.directHost?.directDevices() ?? [],
        this.directHost?.workerId ?? null,
        messages.map((m) => m.idx),
        messages.map((m) => m.id),
        messages.map((m) => m.peer),
        messages.map((m) => m.nid),
      ],
    });
    const byIdx = new Map(rows.map((row) => [row.idx, row]));
    return requests.map((request, idx) => {
      const row = byIdx.get(idx);
      if (!row || row.period_start === null) return undefined;
      return { ...row, inserted: row.reserved && row.device_id !== null ? request.ids.length : 0 };
    });
  }

  private async sendDirect(accountId: string, valid: ValidSend, scheduled: boolean, now: Date): Promise<SendResponse> {
    const ids = valid.recipients.map(() => newId('msg'));
    const status: MessageStatus = scheduled ? 'SCHEDULED' : 'QUEUED';
    // Listen for the acknowledgements before the messages exist, so none can be missed.
    const ticket = scheduled || this.sendWaitMs === 0 ? undefined : this.acks.expect(ids);
    const dueAt = scheduled ? valid.scheduledAt! : now;
    // One statement (so one implicit transaction, and the account's usage row is locked only for
    // its duration): pick the device, reserve the quota, insert the messages.
    // Concurrent direct sends are accepted together: one statement and one commit for many.
    const row = await this.accept({
      accountId,
      deviceId: valid.deviceId ?? null,
      type: valid.type,
      content: valid.content,
      mediaUrl: valid.mediaUrl,
      status,
      dueAt,
      scheduledAt: valid.scheduledAt,
      ids,
      recipients: valid.recipients,
      nids: ids.map(networkMessageIdFor),
      now,
      // The worker in this process may send them at once (not scheduled ones, and only when the request waits for them).
      local: !scheduled && ticket !== undefined && this.directHost !== undefined,
    });
    if (!row || row.inserted === 0) {
      ticket?.cancel();
      if (!row) throw new AppError('NOT_FOUND', 'Account not found');
      // Nothing was written; find out why (this path is rare, so it may cost a query or two).
      if (!row.device_id) await this.resolveDevice(this.database, accountId, valid.deviceId);
      throw await quotaExceeded(this.database, accountId, ids.length, row);
    }
    if (row.taken && this.directHost) {
      // Inserted already claimed by the worker in this process: it sends them now.
      const nids = ids.map(networkMessageIdFor);
      this.directHost.handOver(
        row.device_id!,
        ids.map((id, i) => ({
          id,
          accountId,
          jobId: null,
          to: valid.recipients[i]!,
          type: valid.type,
          content: valid.content,
          mediaUrl: valid.mediaUrl,
          networkMessageId: nids[i]!,
          attempts: 1,
          priority: 0,
        })),
      );
    } else {
      // Wake the device's owner: at once if it is in this process, by NOTIFY if it is elsewhere.
      this.bus.local('waygate_dispatch', row.device_id!);
      this.bus.publishSoon('waygate_dispatch', row.device_id!);
    }
    messageTransitions.inc({ status: 'ACCEPTED' }, ids.length);

    // A device known to be down (DISCONNECTED) cannot acknowledge anything now: answer 202 with the
    // messages QUEUED at once instead of holding the request for SEND_WAIT_MS.
    if (ticket && !row.device_connected) ticket.cancel();
    else if (ticket) {
      try {
        await ticket.wait(this.sendWaitMs, async () => {
          const rows = await this.database.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::text[]) AND status IN ('QUEUED', 'SENDING')`,
            [ids],
          );
          return (rows[0]?.n ?? 0) === 0;
        });
      } finally {
        ticket.cancel();
      }
    }
    // An in-process worker hands its rows over with the acknowledgement; otherwise read them.
    const rows =
      ticket && ids.every((id) => ticket.rows.has(id))
        ? ids.map((id) => ticket.rows.get(id)!)
        : await this.database.query<MessageRow>('SELECT * FROM messages WHERE id = ANY($1::text[])', [ids]);
    const byId = new Map(rows.map((row) => [row.id, toMessage(row)]));
    const messages = ids.map((id) => byId.get(id)!);
    const settled = messages.every((m) => !['SCHEDULED', 'QUEUED', 'SENDING'].includes(m.status));
    return {
      statusCode: settled ? 200 : 202,
      body: { success: true, message: messages[0]!, messages, async: !settled },
    };
  }

  private async createBulkJob(accountId: string, valid: ValidSend, scheduled: boolean, now: Date): Promise<SendResponse> {
    const jobId = newId('job');
    const status = scheduled ? 'SCHEDULED' : 'PROCESSING';
    const total = await this.database.transaction(async (tx) => {
      // What is wrong with the request itself (unknown groups) is said before the state of the account (no device).
      if (valid.groupIds.length > 0) {
        const found = await tx.query<{ id: string }>('SELECT id FROM groups WHERE account_id = $1 AND id = ANY($2::text[])', [accountId, valid.groupIds]);
        const known = new Set(found.map((g) => g.id));
        const missing = valid.groupIds.filter((id) => !known.has(id));
        if (missing.length > 0) {
          throw new AppError(
            'VALIDATION_ERROR',
            `No such group: ${missing.join(', ')}`,
            missing.map((id) => ({ field: `groupIds[${valid.groupIds.indexOf(id)}]`, message: `no group ${id} in this account` })),
          );
        }
      }
      const device = await this.resolveDevice(tx, accountId, valid.deviceId);
      // The recipient set is frozen now, de-duplicated by phone: explicit recipients in request
      // order, then group members. Node never holds it as objects; it stays one array in one row.
      const [job] = await tx.query<{ total_contacts: number }>(
        `INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, media_url, recipients, group_ids, total_contacts, scheduled_at)
         SELECT $1, $2, $3, $4, $5, $6, $7, COALESCE(r.list, '{}'), $9, COALESCE(cardinality(r.list), 0), $10
           FROM (SELECT array_agg(phone ORDER BY ord) AS list FROM (
                   SELECT DISTINCT ON (phone) phone, ord FROM (
                     SELECT p AS phone, o AS ord FROM unnest($8::text[]) WITH ORDINALITY AS t(p, o)
                     UNION ALL
                     SELECT c.phone_number, 1e12 + row_number() OVER (ORDER BY gm.group_id, gm.added_at, c.id)
                       FROM group_members gm JOIN contacts c ON c.id = gm.contact_id
                      WHERE gm.group_id = ANY($9::text[]) AND c.account_id = $2
                   ) AS everyone ORDER BY phone, ord
                 ) AS unique_phones) AS r
         RETURNING total_contacts`,
        [jobId, accountId, device, status, valid.type, valid.content, valid.mediaUrl, valid.recipients, valid.groupIds, valid.scheduledAt],
      );
      const count = job!.total_contacts;
      if (count === 0) {
        throw new AppError('VALIDATION_ERROR', 'The groups have no members and no recipients were given: nothing to send', [
          { field: 'groupIds', message: 'the groups are empty' },
        ]);
      }
      const periodStart = await reserveQuota(tx, accountId, count, now);
      await tx.query('UPDATE bulk_jobs SET quota_period_start = $2 WHERE id = $1', [jobId, periodStart]);
      await tx.query(`SELECT pg_notify('waygate_dispatch', 'fanout')`);
      return count;
    });
    messageTransitions.inc({ status: 'ACCEPTED' }, total);
    return {
      statusCode: 202,
      body: {
        success: true,
        jobId,
        status,
        totalContacts: total,
        message: `Bulk job ${jobId} created for ${total} recipient${total === 1 ? '' : 's'}${scheduled ? `, scheduled for ${valid.scheduledAt!.toISOString()}` : ''}`,
      },
    };
  }

  async list(
    accountId: string,
    options: ListingRequest & { status?: MessageStatus | undefined; jobId?: string | undefined; to?: string | undefined; deviceId?: string | undefined; direction?: 'in' | 'out' | undefined },
  ): Promise<Listing<Message>> {
    const where = ['m.account_id = $1'];
    const params: unknown[] = [accountId];
    const add = (clause: string, value: unknown): void => {
      params.push(value);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (options.status) add('m.status = ?', options.status);
    if (options.jobId) add('m.job_id = ?', options.jobId);
    if (options.deviceId) add('m.device_id = ?', options.deviceId);
    if (options.direction) add('m.direction = ?', options.direction);
    if (options.to) {
      const phone = normalizePhone(options.to);
      if (!phone.ok) throw new AppError('VALIDATION_ERROR', `to ${phone.message}`, [{ field: 'to', message: phone.message }]);
      add('m.peer = ?', phone.digits);
    }
    const listing = await this.lister.list<MessageRow>({ kind: 'messages', table: 'messages m', alias: 'm', where, params }, options);
    return { data: listing.data.map(toMessage), meta: listing.meta };
  }

  async get(accountId: string, id: string): Promise<Message> {
    const [row] = await this.database.query<MessageRow>('SELECT * FROM messages WHERE id = $1 AND account_id = $2', [id, accountId]);
    if (!row) throw new AppError('NOT_FOUND', 'Message not found');
    return toMessage(row);
  }

  /** Cancels a message that has not been handed to the network yet (SCHEDULED or QUEUED). */
  async cancel(accountId: string, id: string): Promise<Message> {
    await this.database.transaction(async (tx) => {
      const [row] = await tx.query<{ status: MessageStatus }>(
        'SELECT status FROM messages WHERE id = $1 AND account_id = $2 FOR UPDATE',
        [id, accountId],
      );
      if (!row) throw new AppError('NOT_FOUND', 'Message not found');
      if (row.status !== 'SCHEDULED' && row.status !== 'QUEUED') {
        throw new AppError('CONFLICT', `The message is ${row.status}; only SCHEDULED or QUEUED messages can be cancelled`, { status: row.status });
      }
      const { jobIds } = await cancelMessages(tx, 'id = $1', [id]);
      if (jobIds.length > 0) await completeJobs(tx, jobIds);
    });
    return this.get(accountId, id);
  }
}

export class BulkJobService {
  constructor(
    private readonly database: Database,
    private readonly lister: Lister,
  ) {}

  async list(accountId: string, options: ListingRequest & { status?: string | undefined }): Promise<Listing<ReturnType<typeof toBulkJob>>> {
    const where = ['j.account_id = $1'];
    const params: unknown[] = [accountId];
    if (options.status) {
      params.push(options.status);
      where.push('j.status = $2');
    }
    const listing = await this.lister.list<BulkJobRow>({ kind: 'bulk-jobs', table: 'bulk_jobs j', alias: 'j', columns: BULK_JOB_COLUMNS, where, params }, options);
    return { data: listing.data.map(toBulkJob), meta: listing.meta };
  }

  async get(accountId: string, id: string): Promise<ReturnType<typeof toBulkJob>> {
    const [row] = await this.database.query<BulkJobRow>(`SELECT ${BULK_JOB_COLUMNS} FROM bulk_jobs WHERE id = $1 AND account_id = $2`, [id, accountId]);
    if (!row) throw new AppError('NOT_FOUND', 'Bulk job not found');
    return toBulkJob(row);
  }

  /**
   * Cancels a job: messages not yet handed to the network, and recipients not yet fanned out,
   * are CANCELLED and refunded, and a bulk_job.cancelled event is written. Workers hear of it
   * (NOTIFY 'cancel:<jobId>' on commit) and cancel the messages they had claimed but not yet
   * handed over (MessageQueue.cancelClaimed); only those already with the network still finish.
   */
  async cancel(accountId: string, id: string): Promise<ReturnType<typeof toBulkJob>> {
    await this.database.transaction(async (tx) => {
      // FOR UPDATE waits for fan-out chunks in flight (they hold the row FOR KEY SHARE) and keeps new ones out.
      const [job] = await tx.query<{ status: string; total_contacts: number; fanned_out_at: Date | null; quota_period_start: Date | null }>(
        'SELECT status, total_contacts, fanned_out_at, quota_period_start FROM bulk_jobs WHERE id = $1 AND account_id = $2 FOR UPDATE',
        [id, accountId],
      );
      if (!job) throw new AppError('NOT_FOUND', 'Bulk job not found');
      if (job.status !== 'SCHEDULED' && job.status !== 'PROCESSING') {
        throw new AppError('CONFLICT', `The job is ${job.status}; only SCHEDULED or PROCESSING jobs can be cancelled`, { status: job.status });
      }
      await cancelMessages(tx, `job_id = $1 AND status IN ('SCHEDULED', 'QUEUED')`, [id]);
      // Recipients never fanned out have no message to cancel: counted and refunded here.
      let notFannedOut = 0;
      if (!job.fanned_out_at) {
        const [created] = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE job_id = $1', [id]);
        notFannedOut = job.total_contacts - (created?.n ?? 0);
      }
      const [updated] = await tx.query<{ event_data: unknown }>(
        `UPDATE bulk_jobs j SET status = 'CANCELLED', cancelled_at = now(), cancelled_count = cancelled_count + $2, recipients = NULL WHERE id = $1
         RETURNING waygate_job_json(j) AS event_data`,
        [id, notFannedOut],
      );
      await refundQuota(tx, [{ accountId, periodStart: job.quota_period_start, count: notFannedOut }]);
      await appendEvents(tx, [{ accountId, type: 'bulk_job.cancelled', data: updated!.event_data }]);
      await tx.query(`SELECT pg_notify('waygate_dispatch', 'cancel:' || $1::text)`, [id]);
    });
    return this.get(accountId, id);
  }
}
