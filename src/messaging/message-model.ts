/** Message and bulk-job records as the API shows them, and the rules of their states. */
import { createHash } from 'node:crypto';
import type { IncomingMedia, MessageType } from '../network/network.js';

export type MessageStatus = 'SCHEDULED' | 'QUEUED' | 'SENDING' | 'SENT' | 'DELIVERED' | 'READ' | 'FAILED' | 'CANCELLED' | 'RECEIVED';
export type BulkJobStatus = 'SCHEDULED' | 'PROCESSING' | 'COMPLETED' | 'CANCELLED';
export const MESSAGE_TYPES: readonly MessageType[] = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT'];
export const FINAL_STATUSES: readonly MessageStatus[] = ['FAILED', 'CANCELLED', 'READ'];

/**
 * The network message id: derived from the message id, so a resend after a crash carries the
 * same one (the network de-duplicates it) and a receipt finds its message by it. Shaped as
 * WhatsApp Web's own ids (Baileys' generateMessageIDV2: "3EB0" and 18 upper-case hex digits, here
 * the first 9 bytes of the SHA-256 of the message id), so messages sent through Waygate do not
 * stand out on WhatsApp by their ids.
 */
export function networkMessageIdFor(messageId: string): string {
  return `3EB0${createHash('sha256').update(messageId).digest('hex').slice(0, 18).toUpperCase()}`;
}
/** The same derivation in SQL, for messages created by INSERT ... SELECT. */
export const NETWORK_MESSAGE_ID_SQL = (idExpression: string): string =>
  `'3EB0' || upper(substr(encode(sha256(convert_to(${idExpression}, 'UTF8')), 'hex'), 1, 18))`;

export interface Message {
  id: string;
  direction: 'out' | 'in';
  deviceId: string;
  jobId: string | null;
  to: string | null;
  from: string | null;
  /** Incoming on WhatsApp: the sender's LID (`<digits>@lid`), when the network used or told it. */
  fromLid: string | null;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  /** Incoming media: what the network says about it (the file stays on the network). */
  media: IncomingMedia | null;
  status: MessageStatus;
  attempts: number;
  error: { code: string; message: string } | null;
  scheduledAt: Date | null;
  createdAt: Date;
  queuedAt: Date | null;
  sentAt: Date | null;
  deliveredAt: Date | null;
  readAt: Date | null;
  failedAt: Date | null;
  cancelledAt: Date | null;
  receivedAt: Date | null;
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
  media: IncomingMedia | null;
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
}

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
});

export interface BulkJob {
  id: string;
  status: BulkJobStatus;
  deviceId: string;
  type: MessageType;
  totalContacts: number;
  sentCount: number;
  failedCount: number;
  deliveredCount: number;
  readCount: number;
  cancelledCount: number;
  scheduledAt: Date | null;
  createdAt: Date;
  completedAt: Date | null;
  cancelledAt: Date | null;
}

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
