/**
 * Message and bulk-job rows and their mapping to the records the API shows (the records
 * themselves are defined once, in message-record.ts), and the rules of their states.
 */
import { hash } from 'node:crypto';
import type { KindFields } from '../network/network.js';
import { MessageTypeSchema, type BulkJob, type BulkJobStatus, type Message, type MessageMedia, type MessageStatus, type MessageType } from './message-record.js';

export type { BulkJob, BulkJobJson, BulkJobStatus, Message, MessageJson, MessageStatus } from './message-record.js';
export const MESSAGE_TYPES: readonly MessageType[] = MessageTypeSchema.enum;

/**
 * The network message id: derived from the message id, so a resend after a crash carries the
 * same one (the network de-duplicates it) and a receipt finds its message by it. Shaped as
 * WhatsApp Web's own ids (Baileys' generateMessageIDV2: "3EB0" and 18 upper-case hex digits, here
 * the first 9 bytes of the SHA-256 of the message id), so messages sent through Waygate do not
 * stand out on WhatsApp by their ids.
 */
export function networkMessageIdFor(messageId: string): string {
  return `3EB0${hash('sha256', messageId, 'hex').slice(0, 18).toUpperCase()}`;
}
/** The same derivation in SQL, for messages created by INSERT ... SELECT. */
export const NETWORK_MESSAGE_ID_SQL = (idExpression: string): string =>
  `'3EB0' || upper(substr(encode(sha256(convert_to(${idExpression}, 'UTF8')), 'hex'), 1, 18))`;

/**
 * The queue's two levels, lower first: a device's claim takes every due direct send (a request
 * waits for it) before any bulk message (the queue index is ordered by priority, then due_at).
 */
export const PRIORITY = { direct: 0, bulk: 1 } as const;

/**
 * What a message's kind carries beyond type, content and media, as stored (messages.payload,
 * bulk_jobs.payload): the network's kind fields, and a REACTION's target by message id.
 */
export interface KindPayload extends KindFields {
  /** A POLL, with each voter's current choice once votes come (`voters`: voter → options). */
  poll?: { options: string[]; multiple: boolean; voters?: Record<string, string[]> | undefined } | undefined;
  reaction?: { messageId: string | null; emoji: string } | undefined;
}

/** A POLL's record: its options and the tally of the voters' current choices. */
function pollRecord(poll: KindPayload['poll']): Message['poll'] {
  if (!poll) return null;
  const choices = Object.values(poll.voters ?? {});
  return { options: poll.options, multiple: poll.multiple, votes: poll.options.map((option) => ({ option, count: choices.filter((c) => c.includes(option)).length })) };
}

export interface MessageRow {
  id: string;
  account_id: string;
  device_id: string;
  job_id: string | null;
  direction: 'out' | 'in';
  peer: string;
  peer_lid?: string | null;
  type: MessageType;
  content: string;
  media_url: string | null;
  media: MessageMedia | null;
  status: MessageStatus;
  attempts: number;
  error_code: string | null;
  error_message: string | null;
  scheduled_at: Date | null;
  created_at: Date;
  queued_at: Date | null;
  sent_at: Date | null;
  delivered_at: Date | null;
  read_at: Date | null;
  failed_at: Date | null;
  cancelled_at: Date | null;
  received_at: Date | null;
  network_message_id: string;
  payload: KindPayload | null;
  reply_to: string | null;
  mentions: string[] | null;
  edited_at?: Date | null;
  deleted_at?: Date | null;
  /** Set for a group member's message: the group (<digits>@g.us); otherwise the chat is the peer. */
  chat_id?: string | null;
}

/** The one place that maps a message's columns to its fields (waygate_message_json does the same in SQL, kept equal by test/record-contract.test.ts). */
export const toMessage = (r: MessageRow): Message => ({
  id: r.id,
  direction: r.direction,
  deviceId: r.device_id,
  jobId: r.job_id,
  to: r.direction === 'out' ? r.peer : null,
  from: r.direction === 'in' ? r.peer : null,
  fromLid: r.peer_lid ?? null,
  type: r.type,
  content: r.content,
  mediaUrl: r.media_url,
  media: r.media ?? null,
  status: r.status,
  attempts: r.attempts,
  error: r.error_code ? { code: r.error_code, message: r.error_message ?? '' } : null,
  scheduledAt: r.scheduled_at,
  createdAt: r.created_at,
  queuedAt: r.queued_at,
  sentAt: r.sent_at,
  deliveredAt: r.delivered_at,
  readAt: r.read_at,
  failedAt: r.failed_at,
  cancelledAt: r.cancelled_at,
  receivedAt: r.received_at,
  location: r.payload?.location ?? null,
  contacts: r.payload?.contacts ?? null,
  poll: pollRecord(r.payload?.poll),
  reaction: r.payload?.reaction ?? null,
  replyTo: r.reply_to,
  mentions: r.mentions,
  editedAt: r.edited_at ?? null,
  deletedAt: r.deleted_at ?? null,
  chatId: r.chat_id ?? r.peer,
});

export interface BulkJobRow {
  id: string;
  status: BulkJobStatus;
  device_id: string;
  type: MessageType;
  total_contacts: number;
  sent_count: number;
  failed_count: number;
  delivered_count: number;
  read_count: number;
  cancelled_count: number;
  scheduled_at: Date | null;
  created_at: Date;
  completed_at: Date | null;
  cancelled_at: Date | null;
}

export const BULK_JOB_COLUMNS =
  'id, status, device_id, type, total_contacts, sent_count, failed_count, delivered_count, read_count, cancelled_count, scheduled_at, created_at, completed_at, cancelled_at';

/** The one place that maps a bulk job's columns to its fields (waygate_job_json does the same in SQL, kept equal by test/record-contract.test.ts). */
export const toBulkJob = (r: BulkJobRow): BulkJob => ({
  id: r.id,
  status: r.status,
  deviceId: r.device_id,
  type: r.type,
  totalContacts: r.total_contacts,
  sentCount: r.sent_count,
  failedCount: r.failed_count,
  deliveredCount: r.delivered_count,
  readCount: r.read_count,
  cancelledCount: r.cancelled_count,
  scheduledAt: r.scheduled_at,
  createdAt: r.created_at,
  completedAt: r.completed_at,
  cancelledAt: r.cancelled_at,
});
