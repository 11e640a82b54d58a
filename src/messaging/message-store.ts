/**
 * Every statement on the messages table, one named function each. The table is the queue: only
 * the worker holding a device's lease claims its messages (SKIP LOCKED, direct sends first,
 * oldest first), and what it writes about a claimed message is written only while `claimed_by`
 * is still that worker. Outcomes and receipts, which also count into jobs and write events, are
 * in outcomes.ts; the direct-send insert is in accept.ts.
 */
import { RERUN_IF_SKIPPED, type Database, type PreparedStatement, type Queryable } from '../platform/database.js';
import type { ListingSource } from '../platform/listing.js';
import { firstIdAt } from '../platform/ids.js';
import type { KindFields, MessageRef, MessageType, NetworkEvent } from '../network/network.js';
import type { MessageMedia } from './message-record.js';
import { PUBLISH_MEDIA_SQL } from '../media/media-store.js';
import { appendEventsSql } from '../events/event-store.js';
import { PRIORITY, type KindPayload, type MessageRow, type MessageStatus } from './message-model.js';
import { chatOfReferenced, type Referenced } from './message-kinds.js';
import { CANCELLABLE_STATUSES, UNSETTLED_STATUSES, sqlList } from './message-states.js';
import { START_JOBS_SQL } from './job-store.js';
import { messageTransitions } from '../platform/metrics.js';
import { REFUND_SQL } from './quota-store.js';
import { CHAT_OF_INCOMING_SQL } from '../conversations/chat-store.js';
import { COUNT_INTO_DAYS_SQL } from './message-days.js';
import { DEQUEUE_ROWS_SQL, DEQUEUE_SQL, ENQUEUE_SQL } from './queue-store.js';

/** A message claimed for sending, as the device runner hands it to the network. */
export interface ClaimedMessage {
  id: string;
  accountId: string;
  jobId: string | null;
  to: string;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  payload: KindPayload | null;
  mentions: string[] | null;
  /** The message it quotes, or a REACTION's target (null: none, or no longer stored). */
  reference: MessageRef | null;
  networkMessageId: string;
  attempts: number;
  priority: number;
}

/** The network's kind fields of a stored payload (a reaction's target is not one). */
export function kindOf(payload: KindPayload | null): KindFields | undefined {
  if (!payload) return undefined;
  const { reaction: _, ...kind } = payload;
  return Object.keys(kind).length > 0 ? kind : undefined;
}

/** The columns of a message that a reference to it needs (Referenced). */
const REFERENCED_COLUMNS = ['id', 'device_id', 'peer', 'chat_id', 'direction', 'network_message_id', 'type', 'content', 'payload'] as const;

/** SQL: a message row `q` as one JSON value of Referenced's shape, NULL when there is none (the far side of a LEFT JOIN). */
export const REFERENCED_JSON_SQL = (q: string): string =>
  `CASE WHEN ${q}.id IS NULL THEN NULL ELSE json_build_object(${REFERENCED_COLUMNS.map((c) => `'${c}', ${q}.${c}`).join(', ')}) END`;

/** SQL: the id of the message a message row `m` refers to (its replyTo, or a REACTION's target). */
const REFERENCE_ID_SQL = (m: string): string => `COALESCE(${m}.reply_to, ${m}.payload->'reaction'->>'messageId')`;

/**
 * SQL (a join to follow a FROM item): the message whose id is `id` (an expression over the rows
 * before it) as `q`, all NULL when there is none. One primary-key look-up a
 * row whatever the statistics of messages say: as a join (LEFT JOIN messages q ON q.id = …) on
 * the statistics of a table analysed with pages and no rows, which the planner takes for one row
 * however many it holds, the look-up was an unparameterized walk of the primary key filtered by
 * the join, once a row (a claim of 200 replies read 177,000 pages among 8,000 messages). A
 * LATERAL subquery (OFFSET 0: not merged into a join) has the id as a condition of its own scan.
 */
export const REFERENCED_ROW_SQL = (id: string, q: string): string =>
  `LEFT JOIN LATERAL (SELECT ${q}.* FROM messages ${q} WHERE ${q}.id = ${id} OFFSET 0) AS ${q} ON true`;

/**
 * A message as the network refers to it (a quote, a reaction's target, an edit, a read receipt):
 * its chat, and in a group chat the member who wrote it (the peer: their number, or their LID
 * while WhatsApp hides the number; as read receipts name them, see whatsapp/groups.ts readKeys).
 */
export function messageRefOf(referenced: Referenced): MessageRef {
  const inGroup = referenced.direction === 'in' && Boolean(referenced.chat_id);
  return {
    networkMessageId: referenced.network_message_id,
    fromMe: referenced.direction === 'out',
    chat: chatOfReferenced(referenced),
    ...(inGroup ? { participant: referenced.peer } : {}),
    type: referenced.type,
    content: referenced.content,
    kind: kindOf(referenced.payload),
  };
}

/** What one device's dispatch asks to claim: up to `limit` due messages (priority 0 only when `onlyDirect`). */
export interface ClaimRequest {
  deviceId: string;
  limit: number;
  onlyDirect: boolean;
}

/**
 * Claims due messages for several devices (each device once), and starts their SCHEDULED jobs,
 * in one statement. waygate_due_rows (drizzle/repeatable/10_message_queue.sql) walks a device's
 * range of the queue in order (SKIP LOCKED) whatever the statistics say, and returns each due
 * message with the addresses of its queue row and of its message, both locked: the dequeue and
 * the update are TID scans, so no plan of this statement reads more than the rows it claims,
 * however stale the statistics it was made on, and the messages the claimed ones refer to are
 * looked up one key each (REFERENCED_ROW_SQL): one generic plan serves every claim (generic
 * plans run with sequential scans off, see openDatabase), planned
 * once per connection instead of on each call, which cost as much as running it when a thousand
 * paced devices each claimed a message a second.
 *
 * waygate_due_rows is VOLATILE, so its walk has a snapshot newer than the statement's: a row it
 * locks may be a version the statement cannot see, which the TID scans then skip. A message and
 * its queue row are written together, so both are skipped or neither; one taken out of the queue
 * and not claimed (or claimed and left in it) would be lost or sent twice, and the statement runs
 * again instead (RERUN_IF_SKIPPED; MessageQueue runs it through `retrying`).
 */
const CLAIM: Omit<PreparedStatement, 'values'> = {
  name: 'messages_claim',
  genericPlan: true,
  text: `WITH due AS (
       SELECT d.queue_row, d.message_row FROM unnest($1::text[], $2::int[], $4::int[]) AS r(device_id, lim, max_priority)
              CROSS JOIN LATERAL waygate_due_rows(r.device_id, r.max_priority, r.lim) AS d),
     dequeued AS (${DEQUEUE_ROWS_SQL('ARRAY(SELECT queue_row FROM due)')} RETURNING 1),
     claimed AS (
       UPDATE messages m SET status = 'SENDING', claimed_by = $3, attempts = m.attempts + 1, queued_at = COALESCE(m.queued_at, now())
        WHERE m.ctid = ANY (ARRAY(SELECT message_row FROM due))
       RETURNING m.id, m.device_id, m.account_id, m.job_id, m.peer, m.type, m.content, m.media_url, m.payload, m.mentions, m.reply_to, m.network_message_id, m.attempts, m.priority),
     started AS (${START_JOBS_SQL('claimed')})
     SELECT c.*, ${REFERENCED_JSON_SQL('q')} AS referenced
       FROM claimed c ${REFERENCED_ROW_SQL(REFERENCE_ID_SQL('c'), 'q')}
      WHERE (SELECT ${RERUN_IF_SKIPPED(['SELECT count(*) FROM dequeued'], ['SELECT count(*) FROM claimed'])})`,
};

/**
 * Claims for each request's device, by device. A device may be asked for only once: a second
 * request of the same device in the same statement would find the rows the first locked (its
 * own locks do not make SKIP LOCKED skip them).
 */
export async function claimDue(db: Pick<Database, 'queryPrepared'>, workerId: string, requests: ClaimRequest[]): Promise<Map<string, ClaimedMessage[]>> {
  const rows = await db.queryPrepared<{
    id: string; device_id: string; account_id: string; job_id: string | null; peer: string; type: MessageType; content: string; media_url: string | null;
    payload: KindPayload | null; mentions: string[] | null; network_message_id: string; attempts: number; priority: number;
    referenced: Referenced | null;
  }>({ ...CLAIM, values: [requests.map((r) => r.deviceId), requests.map((r) => r.limit), workerId, requests.map((r) => (r.onlyDirect ? PRIORITY.direct : PRIORITY.bulk))] });
  const byDevice = new Map<string, ClaimedMessage[]>();
  for (const r of rows) {
    const claimed: ClaimedMessage = {
      id: r.id,
      accountId: r.account_id,
      jobId: r.job_id,
      to: r.peer,
      type: r.type,
      content: r.content,
      mediaUrl: r.media_url,
      payload: r.payload,
      mentions: r.mentions,
      reference: r.referenced && messageRefOf(r.referenced),
      networkMessageId: r.network_message_id,
      attempts: r.attempts,
      priority: r.priority,
    };
    const list = byDevice.get(r.device_id);
    if (list) list.push(claimed);
    else byDevice.set(r.device_id, [claimed]);
  }
  return byDevice;
}

/** Puts messages claimed by `workerId` back untouched (it lost the device before handing them over). */
export async function releaseClaimed(db: Queryable, workerId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `WITH released AS (
       UPDATE messages SET status = 'QUEUED', claimed_by = NULL, attempts = GREATEST(0, attempts - 1)
        WHERE id = ANY($1::text[]) AND status = 'SENDING' AND claimed_by = $2
       RETURNING id, device_id, priority, now() AS due_at)
     ${ENQUEUE_SQL('released')}`,
    [ids, workerId],
  );
}

/** Messages a dead owner left in SENDING go back to the queue (resent with the same network id). */
export async function recoverSending(db: Queryable, deviceId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `WITH recovered AS (
       UPDATE messages SET status = 'QUEUED', claimed_by = NULL WHERE device_id = $1 AND status = 'SENDING'
       RETURNING id, device_id, priority, now() AS due_at),
     queued AS (${ENQUEUE_SQL('recovered')} RETURNING 1)
     SELECT count(*)::int AS n FROM queued`,
    [deviceId],
  );
  return row?.n ?? 0;
}

/** Which messages to cancel: a client's cancel, a job's waiting messages, or a worker's claimed ones. */
export type CancelTarget =
  | { message: string }
  | { job: string }
  | { claimedBy: string; ids: string[] };

function cancelWhere(target: CancelTarget): { where: string; params: unknown[] } {
  if ('message' in target) return { where: `id = $1 AND status IN ${sqlList(CANCELLABLE_STATUSES)}`, params: [target.message] };
  if ('job' in target) return { where: `job_id = $1 AND status IN ${sqlList(CANCELLABLE_STATUSES)}`, params: [target.job] };
  return { where: `id = ANY($1::text[]) AND status = 'SENDING' AND claimed_by = $2`, params: [target.ids, target.claimedBy] };
}

/**
 * The one way messages become CANCELLED: counted into their jobs and refunded, in one
 * statement. Returns how many, and the jobs they belong to (which the caller may complete).
 */
export async function cancelMessages(tx: Queryable, target: CancelTarget): Promise<{ count: number; jobIds: string[] }> {
  const { where, params } = cancelWhere(target);
  const rows = await tx.query<{ job_id: string | null; n: number }>(
    `WITH c AS (
       UPDATE messages SET status = 'CANCELLED', cancelled_at = now(), claimed_by = NULL
        WHERE ${where}
       RETURNING id, job_id, account_id, quota_period_start),
     dequeued AS (${DEQUEUE_SQL('SELECT id FROM c')}),
     per_job AS (SELECT job_id, count(*)::int AS n FROM c WHERE job_id IS NOT NULL GROUP BY job_id),
     jobs AS (UPDATE bulk_jobs j SET cancelled_count = j.cancelled_count + c.n FROM per_job c WHERE j.id = c.job_id RETURNING 1),
     refunded AS (${REFUND_SQL('(SELECT account_id, quota_period_start AS period_start, 1 AS n FROM c)')})
     SELECT job_id, count(*)::int AS n FROM c GROUP BY job_id`,
    params,
  );
  const count = rows.reduce((sum, r) => sum + r.n, 0);
  if (count > 0) messageTransitions.inc({ status: 'CANCELLED' }, count);
  return {
    count,
    jobIds: rows.map((r) => r.job_id).filter((jobId): jobId is string => jobId !== null),
  };
}

/** The status of a message, locked for a cancel. */
export async function lockMessageStatus(tx: Queryable, accountId: string, id: string): Promise<MessageStatus | undefined> {
  const [row] = await tx.query<{ status: MessageStatus }>('SELECT status FROM messages WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
  return row?.status;
}

/** A message of the account, locked for an action on it (edit, delete, read). */
export async function lockMessage(tx: Queryable, accountId: string, id: string): Promise<MessageRow | undefined> {
  const [row] = await tx.query<MessageRow>('SELECT * FROM messages WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
  return row;
}

export async function getMessage(db: Queryable, accountId: string, id: string): Promise<MessageRow | undefined> {
  const [row] = await db.query<MessageRow>('SELECT * FROM messages WHERE id = $1 AND account_id = $2', [id, accountId]);
  return row;
}

/** A message a send refers to (a reply's quote, a reaction's target), if it is one of the account's. */
export async function getReferenced(db: Queryable, accountId: string, id: string): Promise<Referenced | undefined> {
  const [row] = await db.query<Referenced>(
    `SELECT ${REFERENCED_COLUMNS.join(', ')} FROM messages WHERE id = $1 AND account_id = $2`,
    [id, accountId],
  );
  return row;
}

export async function getMessages(db: Queryable, ids: string[]): Promise<MessageRow[]> {
  return db.query<MessageRow>('SELECT * FROM messages WHERE id = ANY($1::text[])', [ids]);
}

/** How many of the messages may still be sent or fail. */
export async function countUnsettled(db: Queryable, ids: string[]): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::text[]) AND status IN ${sqlList(UNSETTLED_STATUSES)}`, [ids]);
  return row?.n ?? 0;
}

/** Which of these ids exist. */
export async function existingIds(db: Queryable, ids: string[]): Promise<Set<string>> {
  return new Set((await db.query<{ id: string }>('SELECT id FROM messages WHERE id = ANY($1::text[])', [ids])).map((row) => row.id));
}

/** How many messages a job has so far. */
export async function countJobMessages(db: Queryable, jobId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE job_id = $1', [jobId]);
  return row?.n ?? 0;
}

const BODY_MARK = 'message_bodies';

/**
 * One batch of message-body pruning: the next `batch` messages in id (= creation) order after the
 * sweep's mark and created before `before` lose their body (content becomes '', mediaUrl, media,
 * the kind's fields and mentions null); status, timestamps, peer and error stay, so listings,
 * counts and quotas are unchanged. Messages not yet settled keep their body and are passed over
 * for good (one scheduled far ahead is the only such case). The mark moves to the batch's last
 * id in the same statement, so each batch reads only rows it has not seen.
 */
export async function pruneMessageBodies(db: Queryable, before: Date, batch: number): Promise<{ scanned: number; pruned: number }> {
  const [row] = await db.query<{ scanned: number; pruned: number }>(
    `WITH mark AS (SELECT coalesce((SELECT mark FROM housekeeping_marks WHERE name = $3), '') AS id),
     batch AS (SELECT id FROM messages WHERE id > (SELECT id FROM mark) AND id < $1 ORDER BY id LIMIT $2),
     pruned AS (
       UPDATE messages m SET content = '', media_url = NULL, media = NULL, payload = NULL, mentions = NULL
         FROM batch b
        WHERE m.id = b.id AND m.status NOT IN ${sqlList(UNSETTLED_STATUSES)}
          AND (m.content <> '' OR m.media_url IS NOT NULL OR m.media IS NOT NULL OR m.payload IS NOT NULL OR m.mentions IS NOT NULL)
       RETURNING 1),
     moved AS (
       INSERT INTO housekeeping_marks (name, mark) SELECT $3, max(id) FROM batch HAVING count(*) > 0
       ON CONFLICT (name) DO UPDATE SET mark = GREATEST(housekeeping_marks.mark, excluded.mark))
     SELECT (SELECT count(*) FROM batch)::int AS scanned, (SELECT count(*) FROM pruned)::int AS pruned`,
    [firstIdAt('msg', before), batch, BODY_MARK],
  );
  return row ?? { scanned: 0, pruned: 0 };
}

export interface MessageFilter {
  status?: MessageStatus | undefined;
  jobId?: string | undefined;
  deviceId?: string | undefined;
  direction?: 'in' | 'out' | undefined;
  /** A normalised phone number. */
  peer?: string | undefined;
}

/**
 * The account's messages, newest first along messages_account_created_idx, or a job's along
 * messages_job_idx; the other filters have no index of their own in that order (one on the
 * status would make every status change a non-HOT update), so they are sparse filters.
 */
export function messageListingSource(accountId: string, filter: MessageFilter): ListingSource {
  const where = ['m.account_id = $1'];
  const sparse: string[] = [];
  const params: unknown[] = [accountId];
  const columns = { jobId: 'm.job_id', status: 'm.status', deviceId: 'm.device_id', direction: 'm.direction', peer: 'm.peer' } as const;
  for (const [key, column] of Object.entries(columns) as [keyof MessageFilter, string][]) {
    if (!filter[key]) continue;
    params.push(filter[key]);
    (key === 'jobId' ? where : sparse).push(`${column} = $${params.length}`);
  }
  return { kind: 'messages', table: 'messages m', alias: 'm', where, sparse, params };
}

/**
 * An incoming message as it is stored: the network's `incoming` event, its media already in the
 * media store (`mediaUrl` a STORED file's path, published with the message).
 */
export type IncomingMessage = Omit<Extract<NetworkEvent, { type: 'incoming' }>, 'type' | 'messageType' | 'media' | 'download'> & {
  type: MessageType;
  mediaUrl?: string | undefined;
  media?: MessageMedia | undefined;
};

/**
 * Stores an incoming message with its message.received event and the day's count, in one statement; false for a
 * redelivery. A quote's and a reaction's network ids become the ids of our messages of the device
 * (null when we do not know the message). A STORED file written under the message's id becomes
 * visible in the same statement.
 */
export async function storeIncoming(db: Queryable, deviceId: string, incoming: IncomingMessage, id: string): Promise<boolean> {
  const payload: KindPayload = { ...incoming.kind };
  if (incoming.reaction) payload.reaction = { messageId: null, emoji: incoming.reaction.emoji };
  const known = (nid: string): string => `(SELECT id FROM messages WHERE device_id = $2 AND network_message_id = ${nid})`;
  const rows = await db.query(
    `WITH ins AS (
       INSERT INTO messages (id, account_id, device_id, direction, peer, peer_lid, type, content, media_url, media, status, network_message_id, received_at, created_at,
                             payload, reply_to, mentions, chat_id)
       SELECT $1, d.account_id, d.id, 'in', $3, $10, $4, $5, $6, $9::jsonb, 'RECEIVED', $7, $8, now(),
              CASE WHEN $12::text IS NULL THEN $11::jsonb ELSE jsonb_set($11::jsonb, '{reaction,messageId}', COALESCE(to_jsonb(${known('$12')}), 'null'::jsonb)) END,
              ${known('$13')}, $14::text[], $15
         FROM devices d WHERE d.id = $2
       ON CONFLICT (device_id, network_message_id) DO NOTHING
       RETURNING id, account_id, device_id, peer, peer_lid, chat_id, type, created_at, waygate_message_json(messages) AS event_data),${incoming.media?.status === 'STORED' ? `
     published AS (${PUBLISH_MEDIA_SQL('ins')}),` : ''}
     chat AS (${CHAT_OF_INCOMING_SQL('ins')}),
     src AS (
       SELECT account_id, 'message.received' AS type, event_data AS data FROM ins
       UNION ALL
       -- A reaction to a message of the account (added, or removed with emoji "").
       SELECT account_id, 'message.reaction', jsonb_build_object(
                'messageId', event_data->'reaction'->'messageId', 'deviceId', event_data->'deviceId', 'from', event_data->'from',
                'fromLid', event_data->'fromLid', 'emoji', event_data->'reaction'->'emoji', 'reactionId', event_data->'id', 'at', event_data->'receivedAt')
         FROM ins WHERE event_data->'reaction'->>'messageId' IS NOT NULL),
     ${appendEventsSql('src')},
     day_src AS (SELECT account_id, $2::text AS device_id, 0 AS sent, 0 AS delivered, 0 AS read, 0 AS failed, 1 AS incoming FROM ins),
     days AS (${COUNT_INTO_DAYS_SQL('day_src', 'ev_bump')})
     SELECT id FROM ins`,
    [
      id, deviceId, incoming.from, incoming.type, incoming.content, incoming.mediaUrl ?? null, incoming.networkMessageId, incoming.at,
      incoming.media ? JSON.stringify(incoming.media) : null, incoming.fromLid ?? null,
      Object.keys(payload).length > 0 ? JSON.stringify(payload) : null, incoming.reaction?.networkMessageId ?? null, incoming.replyTo ?? null,
      incoming.mentions && incoming.mentions.length > 0 ? incoming.mentions : null, incoming.chat ?? null,
    ],
  );
  return rows.length > 0;
}

/** Whether the device has stored the incoming message with this network id (a redelivery needs no download). */
export async function incomingExists(db: Queryable, deviceId: string, networkMessageId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM messages WHERE device_id = $1 AND network_message_id = $2', [deviceId, networkMessageId]);
  return rows.length > 0;
}

export interface PollVote {
  pollNetworkMessageId: string;
  voter: string;
  options: string[];
}

/**
 * Records a voter's current choice on a POLL the device sent (replacing their earlier one) with
 * its poll.vote event, in one statement; false when the device has no such poll.
 */
export async function recordPollVote(db: Queryable, deviceId: string, vote: PollVote): Promise<boolean> {
  const rows = await db.query(
    `WITH upd AS (
       UPDATE messages m SET payload = jsonb_set(m.payload, '{poll,voters}', COALESCE(m.payload->'poll'->'voters', '{}'::jsonb) || jsonb_build_object($3::text, $4::jsonb))
        WHERE m.device_id = $1 AND m.network_message_id = $2 AND m.type = 'POLL' AND m.payload ? 'poll'
       RETURNING m.id, m.account_id),
     src AS (SELECT account_id, 'poll.vote' AS type, jsonb_build_object('messageId', id, 'voter', $3::text, 'options', $4::jsonb) AS data FROM upd),
     ${appendEventsSql('src')}
     SELECT id FROM upd`,
    [deviceId, vote.pollNetworkMessageId, vote.voter, JSON.stringify(vote.options)],
  );
  return rows.length > 0;
}

/**
 * SQL (CTEs `ins` and `ins_queued`): inserts accepted direct sends. `source` names a CTE with
 * (id, account_id, device_id, peer, type, content, media_url, payload, reply_to, mentions,
 * status, due_at, nid, period_start, scheduled_at, local); a `local` one is inserted SENDING,
 * claimed by the worker `workerId` (a SQL expression) and counted as its first attempt, for an
 * in-process hand-over; the others are queued, due at due_at.
 */
export const INSERT_DIRECT_SQL = (source: string, workerId: string): string => `
  ins AS (
  INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, media_url, payload, reply_to, mentions, status, priority,
                        network_message_id, quota_period_start, scheduled_at, queued_at, claimed_by, attempts)
  SELECT s.id, s.account_id, s.device_id, 'out', s.peer, s.type, s.content, s.media_url, s.payload, s.reply_to, s.mentions,
         CASE WHEN s.local THEN 'SENDING' ELSE s.status END, ${PRIORITY.direct},
         s.nid, s.period_start, s.scheduled_at, CASE WHEN s.status = 'QUEUED' THEN now() END,
         CASE WHEN s.local THEN ${workerId} END, CASE WHEN s.local THEN 1 ELSE 0 END
    FROM ${source} s
  RETURNING 1),
  ins_queued AS (${ENQUEUE_SQL(`(SELECT s.id, s.device_id, ${PRIORITY.direct}::smallint AS priority, s.due_at FROM ${source} s WHERE s.local IS NOT TRUE) AS w`)})`;
