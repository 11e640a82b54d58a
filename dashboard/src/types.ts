/** The shapes the API answers with (see docs/api.md). */
import type { MessageJson } from '../../src/messaging/message-record';

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

export interface Token {
  id: string;
  name: string;
  prefix: string;
  last4: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

export interface Contact {
  id: string;
  name: string;
  phoneNumber: string;
  createdAt: string;
  updatedAt: string;
}
export interface ImportReport {
  totalRows: number;
  created: number;
  skipped: Array<{ line: number; phoneNumber: string; reason: string }>;
  rejected: Array<{ line: number; errors: Array<{ field: string; message: string }> }>;
}

export interface Group {
  id: string;
  name: string;
  contactsCount: number;
  createdAt: string;
}
export interface Member extends Contact {
  addedAt: string;
}

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
export type { ChatJson as Chat, ChatDetailJson as ChatDetail } from '../../src/conversations/chat-record';

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
export interface WebhookAttempt {
  statusCode: number | null;
  latencyMs: number;
  responseExcerpt: string | null;
  error: string | null;
}
export interface WebhookDelivery {
  id: string;
  eventId: string;
  eventType: string;
  eventSeq: number;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  attempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  lastAttempts: WebhookAttempt[];
}

export interface AccountSummary {
  id: string;
  name: string;
  createdAt: string;
  plan: { id: string; name: string; messageQuota: number | null; period: string; maxDevices: number | null; maxWebhooks: number | null };
  period: { start: string; end: string };
  usage: { messages: number; contacts: number };
  limits: { messages: number | null; devices: number | null; activeWebhooks: number | null };
}
