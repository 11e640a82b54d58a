/** The shapes the API answers with (see docs/api.md). */
import type { MessageJson } from '../../src/messaging/message-record';
import type { components } from '../../client/schema';

type Schemas = components['schemas'];

export interface Page<T> {
  success?: true;
  data: T[];
  meta: { total: number; page: number; limit: number };
}
/** The listings of unbounded tables (messages, bulk jobs, webhook deliveries): a capped total and a cursor. */
export interface Listing<T> {
  success: true;
  data: T[];
  meta: { total: number; totalExact: boolean; page: number; limit: number; nextCursor: string | null };
}
export interface One<T> {
  success: true;
  data: T;
}

export interface SessionState {
  authenticated: boolean;
  signupOpen: boolean;
  freshInstall: boolean;
  /** The first sign-up needs the setup code the server printed in its log. */
  setupCodeRequired: boolean;
  network: string;
  tokenScopes: string[];
  user: { email: string; accountId: string } | null;
  csrfToken: string | null;
}

/** Devices as the API writes them: the server's one definition (type-only, timestamps as ISO strings). */
export type { DeviceJson as Device, DeviceStatus } from '../../src/devices/device-record';
export interface DeviceQr {
  code: string;
  image: string;
  expiresAt: string;
}

/**
 * Records the server describes only in its OpenAPI document: the generated client's types
 * (client/schema.d.ts, `npm run client:generate`), so each shape is written once, by the server.
 */
export type Token = Schemas['Token'];

export type Contact = Schemas['Contact'];
export type ImportReport = Schemas['ContactImportReport'];

export type Group = Schemas['Group'];
export type Member = Schemas['GroupMember'];

/**
 * Messages and bulk jobs as the API writes them: the server's one definition of these records
 * (src/messaging/message-record.ts), with timestamps as ISO strings. Type-only, so Vite bundles
 * nothing from the server.
 */
export type {
  BulkJobJson as BulkJob,
  BulkJobStatus as JobStatus,
  MessageJson as Message,
  MessageStatus,
} from '../../src/messaging/message-record';

/** Chats as the API writes them (src/conversations/chat-record.ts, type-only). */
export type { ChatJson as Chat, ChatDetailJson as ChatDetail, GroupInvite, ParticipantsChangeJson as ParticipantsChange } from '../../src/conversations/chat-record';
/** What a contact shows in a chat (the `presence` news of the live stream). */
export type { ContactPresenceState } from '../../src/conversations/chat-record';

export interface SendResult {
  success: true;
  // Direct send
  message?: MessageJson;
  messages?: MessageJson[];
  /** false for a direct send, true for a bulk job. */
  async: boolean;
  // Bulk job
  jobId?: string;
  status?: string;
  totalContacts?: number;
}

/** Webhook endpoints as the API writes them, with their health: the server's one definition (type-only). */
export type { WebhookJson as Webhook, WebhookHealthState } from '../../src/events/webhook-record';
/** GET /account/overview (type-only). */
export type { OverviewJson as Overview } from '../../src/messaging/overview-record';
export type WebhookAttempt = Schemas['WebhookAttempt'];
export type WebhookDelivery = Schemas['WebhookDelivery'];

export type AccountSummary = Schemas['Account'];

/** POST /media: a file uploaded to send; a send takes its mediaUrl like any other address (type-only). */
export type { UploadJson as Upload } from '../../src/media/upload-record';
