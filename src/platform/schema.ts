/**
 * Drizzle schema: the single description of the tables. SQL migrations under drizzle/ are
 * generated from it (`npm run db:generate`); hand-written parts (extensions, trigram indexes,
 * counter triggers) live in their own custom migrations. Identifier columns (id, *_id, peer,
 * lid, peer_lid, reply_to) are text COLLATE "C" (migration 0057), which Drizzle's column types do
 * not say: a migration that adds one writes the collation, and test/schema-rules.test.ts checks it.
 */
import { bigint, boolean, customType, date, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });
const bytea = customType<{ data: Uint8Array }>({ dataType: () => 'bytea' });

export const plans = pgTable('plans', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Messages per period; null means unlimited. */
  messageQuota: integer('message_quota'),
  period: text('period', { enum: ['month', 'year'] }).notNull(),
  /** Linked devices; null means unlimited. */
  maxDevices: integer('max_devices'),
  /** Active webhook endpoints; null means unlimited. */
  maxWebhooks: integer('max_webhooks'),
  /** Bytes the account's uploads (POST /media) may hold at once; null means unlimited. */
  maxUploadBytes: bigint('max_upload_bytes', { mode: 'number' }),
});

export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  planId: text('plan_id')
    .notNull()
    .references(() => plans.id),
  /** Quota periods are anchored on this instant. */
  planStartedAt: ts('plan_started_at').notNull().defaultNow(),
  /** Kept exact by triggers on contacts; read instead of count(*) for unfiltered listings. */
  contactsCount: integer('contacts_count').notNull().default(0),
  /** The seq of the account's last event: events are numbered 1, 2, 3 … with no gaps. */
  eventSeq: bigint('event_seq', { mode: 'number' }).notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** Stored lower-cased. */
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('users_email_key').on(t.email), index('users_account_idx').on(t.accountId)],
);

/** The one-time setup code of a fresh install (one row at most, id always true); deleted when the first account is created. */
export const setupCodes = pgTable('setup_codes', {
  id: boolean('id').primaryKey().default(true),
  code: text('code').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const apiTokens = pgTable(
  'api_tokens',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** SHA-256 of the token value, hex. The value itself is never stored. */
    tokenHash: text('token_hash').notNull(),
    prefix: text('prefix').notNull(),
    last4: text('last4').notNull(),
    scopes: text('scopes').array().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
    expiresAt: ts('expires_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [uniqueIndex('api_tokens_hash_key').on(t.tokenHash), index('api_tokens_account_idx').on(t.accountId, t.createdAt)],
);

export const usagePeriods = pgTable(
  'usage_periods',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    periodStart: ts('period_start').notNull(),
    /**
     * Plans without a quota spread their counting over shards 1..63 (one per database connection), so busy unlimited accounts do
     * not queue on one row; plans with a quota count in shard 0, where the check is atomic.
     * Usage is the sum over the shards.
     */
    shard: smallint('shard').notNull().default(0),
    messagesUsed: integer('messages_used').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.periodStart, t.shard] })],
);

export const contacts = pgTable(
  'contacts',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** E.164 digits without '+'. */
    phoneNumber: text('phone_number').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('contacts_account_phone_key').on(t.accountId, t.phoneNumber),
    index('contacts_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
  ],
);

export const groups = pgTable(
  'groups',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Kept exact by triggers on group_members. */
    contactsCount: integer('contacts_count').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('groups_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc())],
);

export const groupMembers = pgTable(
  'group_members',
  {
    groupId: text('group_id')
      .notNull()
      .references(() => groups.id, { onDelete: 'cascade' }),
    contactId: text('contact_id')
      .notNull()
      .references(() => contacts.id, { onDelete: 'cascade' }),
    addedAt: ts('added_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.groupId, t.contactId] }),
    index('group_members_contact_idx').on(t.contactId),
    // GET /groups/:id/contacts pages through a group newest member first.
    index('group_members_added_idx').on(t.groupId, t.addedAt.desc(), t.contactId.desc()),
  ],
);

export const devices = pgTable(
  'devices',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** PENDING → CONNECTED ⇄ DISCONNECTED → LOGGED_OUT */
    status: text('status').notNull().default('PENDING'),
    phoneNumber: text('phone_number'),
    qrCode: text('qr_code'),
    qrExpiresAt: ts('qr_expires_at'),
    lastError: text('last_error'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    connectedAt: ts('connected_at'),
    disconnectedAt: ts('disconnected_at'),
    loggedOutAt: ts('logged_out_at'),
    /** Set by DELETE /devices/:id; the row stays for the history of its messages. */
    removedAt: ts('removed_at'),
    /** The worker that owns the device's network session, until lease_expires_at. */
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: ts('lease_expires_at'),
    /** The proxy the WhatsApp network connects through (device-proxy.ts); null: direct. */
    proxyUrl: text('proxy_url'),
  },
  (t) => [index('devices_account_idx').on(t.accountId, t.createdAt), index('devices_lease_idx').on(t.leaseExpiresAt)],
);

/** Live workers (heartbeats of the lease rounds): how many share the devices. */
export const workers = pgTable('workers', {
  id: text('id').primaryKey(),
  /** Renewed every lease round; a worker whose heartbeat is past is not counted. */
  expiresAt: ts('expires_at').notNull(),
});

/** How far a sweep over a table in id order has got (housekeeping.ts). */
export const housekeepingMarks = pgTable('housekeeping_marks', {
  name: text('name').primaryKey(),
  mark: text('mark').notNull(),
});

export const bulkJobs = pgTable(
  'bulk_jobs',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id),
    /** SCHEDULED → PROCESSING → COMPLETED | CANCELLED */
    status: text('status').notNull(),
    type: text('type').notNull(),
    content: text('content').notNull(),
    mediaUrl: text('media_url'),
    /** What the kind carries beyond type, content and media (as messages.payload), copied into each message. */
    payload: jsonb('payload'),
    mentions: text('mentions').array(),
    /** Explicit recipients, until the fan-out has turned them (with group members) into messages. */
    recipients: text('recipients').array(),
    groupIds: text('group_ids').array(),
    totalContacts: integer('total_contacts').notNull(),
    sentCount: integer('sent_count').notNull().default(0),
    failedCount: integer('failed_count').notNull().default(0),
    deliveredCount: integer('delivered_count').notNull().default(0),
    readCount: integer('read_count').notNull().default(0),
    cancelledCount: integer('cancelled_count').notNull().default(0),
    quotaPeriodStart: ts('quota_period_start'),
    scheduledAt: ts('scheduled_at'),
    fannedOutAt: ts('fanned_out_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    completedAt: ts('completed_at'),
    cancelledAt: ts('cancelled_at'),
  },
  (t) => [index('bulk_jobs_account_idx').on(t.accountId, t.createdAt.desc(), t.id.desc())],
);

export const messages = pgTable(
  'messages',
  {
    id: text('id').primaryKey(),
    /** No foreign keys on messages (migration 0021): a trigger on accounts removes an account's messages. */
    accountId: text('account_id').notNull(),
    deviceId: text('device_id').notNull(),
    jobId: text('job_id'),
    /** 'out' for messages we send, 'in' for messages received from the network. */
    direction: text('direction').notNull().default('out'),
    /** The other party: the recipient of an outgoing message, the sender of an incoming one. */
    peer: text('peer').notNull(),
    type: text('type').notNull(),
    content: text('content').notNull(),
    mediaUrl: text('media_url'),
    /** Incoming media: what the network says about it ({mimeType, fileName?, sizeBytes?, seconds?}). */
    media: jsonb('media'),
    /** SCHEDULED → QUEUED → SENDING → SENT → DELIVERED → READ; FAILED, CANCELLED. */
    status: text('status').notNull(),
    /** 0 = direct send, 1 = bulk: direct sends are claimed first. */
    priority: smallint('priority').notNull().default(0),
    attempts: integer('attempts').notNull().default(0),
    networkMessageId: text('network_message_id').notNull(),
    claimedBy: text('claimed_by'),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    quotaPeriodStart: ts('quota_period_start'),
    scheduledAt: ts('scheduled_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    queuedAt: ts('queued_at'),
    sentAt: ts('sent_at'),
    deliveredAt: ts('delivered_at'),
    readAt: ts('read_at'),
    failedAt: ts('failed_at'),
    cancelledAt: ts('cancelled_at'),
    receivedAt: ts('received_at'),
    /** Incoming on WhatsApp: the sender's LID (<digits>@lid), beside the number in peer. */
    peerLid: text('peer_lid'),
    /** What the kind carries beyond type, content and media: {voice} | {location} | {contacts} | {poll} | {reaction: {messageId, emoji}}. */
    payload: jsonb('payload'),
    /** The message this one quotes (a message id of the account; null when none or unknown). */
    replyTo: text('reply_to'),
    /** Numbers mentioned (E.164 digits). */
    mentions: text('mentions').array(),
    /** When the text or caption was last edited (by the account, or by the sender of an incoming message). */
    editedAt: ts('edited_at'),
    /** When the message was deleted for everyone (content is kept; see docs/api.md). */
    deletedAt: ts('deleted_at'),
    /** A group chat's id (<digits>@g.us) for a group member's message; NULL: the chat is the peer (migration 0039 indexes COALESCE(chat_id, peer)). */
    chatId: text('chat_id'),
  },
  (t) => [
    index('messages_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    // Partial (migration 0048): only a bulk job's messages have one, and they are read one job at a
    // time; in the listings' order (migration 0050), so GET /messages?jobId= reads one page of it.
    index('messages_job_idx').on(t.jobId, t.createdAt.desc(), t.id.desc()).where(sql`job_id IS NOT NULL`),
    uniqueIndex('messages_network_id_key').on(t.deviceId, t.networkMessageId),
  ],
);

/**
 * The queue: one row per waiting message (QUEUED or SCHEDULED), from its insert until a worker
 * claims it (or it is cancelled or failed), with when it may be claimed: now, its scheduledAt, or
 * a retry's backoff. Kept apart from messages so that no index of messages holds a column that
 * changes after the insert: every update of a message (claimed, sent, delivered, read) can then
 * be HOT. Writers lock a waiting message before its queue row; the claim, which takes them the
 * other way round, skips rows locked by others (drizzle/repeatable/10_message_queue.sql).
 */
export const messageQueue = pgTable(
  'message_queue',
  {
    id: text('id').primaryKey(),
    deviceId: text('device_id').notNull(),
    /** The message's priority (0 direct, 1 bulk): the claim takes direct sends first. */
    priority: smallint('priority').notNull(),
    dueAt: ts('due_at').notNull(),
  },
  // Partial on a predicate every row meets, so that only a query stating it (QUEUE_WALK_SQL) can
  // use the index: a look-up by id has the primary key alone (migration 0052).
  (t) => [index('message_queue_due_idx').on(t.deviceId, t.priority, t.dueAt, t.id).where(sql`${t.priority} >= 0`)],
);

/**
 * The overview's daily counts per device (migration 0040): outcomes reached and messages received
 * on each UTC day, added by the statements that write them (src/messaging/message-days.ts). No
 * foreign keys, as on messages: an account delete removes them through its trigger.
 */
export const messageDays = pgTable(
  'message_days',
  {
    accountId: text('account_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    deviceId: text('device_id').notNull(),
    sent: integer('sent').notNull().default(0),
    delivered: integer('delivered').notNull().default(0),
    read: integer('read').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    incoming: integer('incoming').notNull().default(0),
  },
  (t) => [primaryKey({ name: 'message_days_pkey', columns: [t.accountId, t.day, t.deviceId] })],
);

/** Failed messages per UTC day and error code (migration 0040), beside message_days. */
export const messageDayFailures = pgTable(
  'message_day_failures',
  {
    accountId: text('account_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    errorCode: text('error_code').notNull(),
    failed: integer('failed').notNull().default(0),
  },
  (t) => [primaryKey({ name: 'message_day_failures_pkey', columns: [t.accountId, t.day, t.errorCode] })],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    statusCode: integer('status_code'),
    response: jsonb('response'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/** Durable events (the outbox): written in the transaction of the state change that causes them. */
export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    /** No foreign key (migration 0019): a trigger on accounts removes an account's events. */
    accountId: text('account_id').notNull(),
    /** Per account, strictly increasing and gap-free; null for webhook.test events, which stand outside the sequence. */
    seq: bigint('seq', { mode: 'number' }),
    type: text('type').notNull(),
    data: jsonb('data').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  // Also a BRIN index on created_at (migration 0015) for the retention sweep.
  (t) => [uniqueIndex('events_account_seq_key').on(t.accountId, t.seq)],
);

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    description: text('description'),
    /** Event types delivered; empty means every type. */
    events: text('events').array().notNull(),
    active: boolean('active').notNull().default(true),
    /** `whsec_` + base64 of 32 random bytes. */
    secret: text('secret').notNull(),
    /** After a rotation the previous secret also signs, until it expires. */
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** Why the endpoint was turned off by Waygate (a 410 answer), if it was. */
    disabledReason: text('disabled_reason'),
    /** Failed attempts since the last successful one (kept by recordOutcomes). */
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    lastSuccessAt: ts('last_success_at'),
    lastFailureAt: ts('last_failure_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('webhook_endpoints_account_idx').on(t.accountId, t.createdAt)],
);

/** One event to one endpoint: retried on its schedule until it succeeds or gives up. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventId: text('event_id')
      .notNull()
      .references(() => events.id, { onDelete: 'cascade' }),
    /** PENDING → SUCCEEDED | FAILED (schedule exhausted, or the endpoint answered 410). */
    status: text('status').notNull().default('PENDING'),
    attempts: integer('attempts').notNull().default(0),
    /** When the next attempt is due; NULL once final. */
    nextAttemptAt: ts('next_attempt_at'),
    claimedBy: text('claimed_by'),
    claimedUntil: ts('claimed_until'),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    createdAt: ts('created_at').notNull().defaultNow(),
    deliveredAt: ts('delivered_at'),
  },
  (t) => [index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.createdAt.desc(), t.id.desc()), index('webhook_deliveries_event_idx').on(t.eventId)],
);

export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    deliveryId: text('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    attemptedAt: ts('attempted_at').notNull().defaultNow(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    /** The first 1,000 characters of the answer, or why there was none. */
    responseExcerpt: text('response_excerpt'),
    error: text('error'),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId, t.attemptedAt)],
);

/** The sandbox network's own world: what a real network would hold on its servers. */
export const sandboxQrCodes = pgTable('sandbox_qr_codes', {
  code: text('code').primaryKey(),
  deviceId: text('device_id').notNull(),
  expiresAt: ts('expires_at').notNull(),
  scannedPhone: text('scanned_phone'),
});

export const sandboxPhones = pgTable('sandbox_phones', {
  deviceId: text('device_id').primaryKey(),
  phoneNumber: text('phone_number').notNull(),
  /** linked | dropped | unlinked */
  state: text('state').notNull(),
  changedAt: ts('changed_at').notNull().defaultNow(),
  /** Bumped on every change so sessions see each drop even when the state string repeats. */
  version: integer('version').notNull().default(1),
  /** A held drop: reconnect attempts fail until POST /sandbox/devices/:id/restore. */
  held: boolean('held').notNull().default(false),
  // Also delivered_mark and read_mark (timestamptz): where a session that starts reads the
  // device's receipts from (SandboxWorld.dueReceipts); only the sandbox's receipt SQL reads them.
});

export const sandboxMessages = pgTable(
  'sandbox_messages',
  {
    networkMessageId: text('network_message_id').notNull(),
    deviceId: text('device_id').notNull(),
    accountId: text('account_id').notNull(),
    to: text('to').notNull(),
    type: text('type').notNull(),
    content: text('content').notNull(),
    mediaBytes: integer('media_bytes'),
    mediaType: text('media_type'),
    fileName: text('file_name'),
    /** What the kind carried, as the network got it (replies and reactions by network message id). */
    payload: jsonb('payload'),
    sendCalls: integer('send_calls').notNull().default(1),
    acceptedAt: ts('accepted_at').notNull().defaultNow(),
    deliverAt: ts('deliver_at'),
    readAt: ts('read_at'),
    /** The sender edited it (content is the latest text) / deleted it for everyone. */
    editedAt: ts('edited_at'),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    primaryKey({ columns: [t.deviceId, t.networkMessageId] }),
    index('sandbox_messages_account_idx').on(t.accountId, t.to),
  ],
);

export const sandboxIncoming = pgTable('sandbox_incoming', {
  seq: bigint('seq', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  deviceId: text('device_id').notNull(),
  networkMessageId: text('network_message_id').notNull(),
  from: text('from').notNull(),
  type: text('type').notNull(),
  content: text('content').notNull(),
  mediaUrl: text('media_url'),
  /** What the kind carries, as the network hands it over (replies and reactions by network message id). */
  payload: jsonb('payload'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/** Incoming messages the device marked read, as the sandbox network saw the receipts. */
export const sandboxReads = pgTable(
  'sandbox_reads',
  {
    deviceId: text('device_id').notNull(),
    networkMessageId: text('network_message_id').notNull(),
    /** The chat the message is in (the sender's number, or a group chat). */
    chat: text('chat'),
    readAt: ts('read_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.deviceId, t.networkMessageId] })],
);

/** The last presence (typing, recording, paused) each device showed in each chat, as the sandbox network saw it. */
export const sandboxPresence = pgTable(
  'sandbox_presence',
  {
    deviceId: text('device_id').notNull(),
    chat: text('chat').notNull(),
    state: text('state').notNull(),
    at: ts('at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.deviceId, t.chat] })],
);

/**
 * Edits, deletes for everyone and read receipts on their way to the network: a queue the worker
 * holding the device works through (due_at set while an action waits; NULL once done or given up).
 */
export const messageActions = pgTable(
  'message_actions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    accountId: text('account_id').notNull(),
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    messageId: text('message_id').notNull(),
    /** 'edit' | 'delete' | 'read' */
    action: text('action').notNull(),
    /** edit: the new text or caption. */
    content: text('content'),
    attempts: integer('attempts').notNull().default(0),
    dueAt: ts('due_at').defaultNow(),
    createdAt: ts('created_at').notNull().defaultNow(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
  },
  (t) => [index('message_actions_due_idx').on(t.deviceId, t.dueAt, t.id).where(sql`${t.dueAt} IS NOT NULL`)],
);

/**
 * The media store (src/media/media-store.ts): one row per incoming media message's file, visible
 * once `storedAt` is set; its bytes in media_chunks, 256 KiB per row (storage EXTERNAL: media is
 * compressed already). Pruned after MEDIA_RETENTION_DAYS.
 */
export const media = pgTable(
  'media',
  {
    messageId: text('message_id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    contentType: text('content_type').notNull(),
    fileName: text('file_name'),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull().default(0),
    /** Hex SHA-256 of the bytes (the ETag). */
    sha256: text('sha256'),
    chunkSize: integer('chunk_size').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    /** Null while the file is being written. */
    storedAt: ts('stored_at'),
  },
  (t) => [
    index('media_created_idx').on(t.createdAt),
    index('media_account_idx').on(t.accountId),
    index('media_uploads_idx')
      .on(t.accountId, t.createdAt.desc(), t.messageId.desc())
      .where(sql`${t.messageId} ~ '^upl_[0-9a-z]{26}$' AND ${t.storedAt} IS NOT NULL`),
  ],
);

export const mediaChunks = pgTable(
  'media_chunks',
  {
    messageId: text('message_id')
      .notNull()
      .references(() => media.messageId, { onDelete: 'cascade' }),
    n: integer('n').notNull(),
    data: bytea('data').notNull(),
  },
  (t) => [primaryKey({ name: 'media_chunks_pk', columns: [t.messageId, t.n] })],
);

/** One conversation of a device (src/conversations/chat-store.ts owns every statement on it). */
export const chats = pgTable(
  'chats',
  {
    /**
     * No foreign keys (migration 0049): every insert takes its device and account from a devices
     * row in the same statement, and a trigger on accounts removes an account's chats.
     */
    deviceId: text('device_id').notNull(),
    /** Direct: the person's number (digits), or <digits>@lid while it is unknown; group: <digits>@g.us. */
    id: text('id').notNull(),
    accountId: text('account_id').notNull(),
    type: text('type', { enum: ['direct', 'group'] }).notNull(),
    name: text('name'),
    phoneNumber: text('phone_number'),
    lid: text('lid'),
    lastMessageId: text('last_message_id'),
    lastActivityAt: ts('last_activity_at').notNull().defaultNow(),
    unreadCount: integer('unread_count').notNull().default(0),
    /** Group: [{phoneNumber, admin}] (the device's own number included). */
    participants: jsonb('participants'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.deviceId, t.id] }),
    index('chats_account_activity_idx').on(t.accountId, t.lastActivityAt.desc(), t.deviceId.desc(), t.id.desc()),
    index('chats_device_activity_idx').on(t.deviceId, t.lastActivityAt.desc(), t.id.desc()),
  ],
);

/** POST /numbers/check answers per device, kept 7 days. */
export const numberChecks = pgTable(
  'number_checks',
  {
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    phoneNumber: text('phone_number').notNull(),
    onNetwork: boolean('on_network').notNull(),
    chatId: text('chat_id'),
    checkedAt: ts('checked_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.deviceId, t.phoneNumber] })],
);

/** What the API asks of the worker holding a device's session; answered (or done) by that worker. */
export const deviceRequests = pgTable('device_requests', {
  id: text('id').primaryKey(),
  deviceId: text('device_id')
    .notNull()
    .references(() => devices.id, { onDelete: 'cascade' }),
  kind: text('kind').notNull(),
  payload: jsonb('payload').notNull(),
  answer: jsonb('answer'),
  error: text('error'),
  createdAt: ts('created_at').notNull().defaultNow(),
  answeredAt: ts('answered_at'),
});

/** The sandbox network's WhatsApp groups (POST /sandbox/groups). */
export const sandboxGroups = pgTable(
  'sandbox_groups',
  {
    id: text('id').primaryKey(),
    deviceId: text('device_id').notNull(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    members: text('members').array().notNull(),
    /** Members made admins besides the first (the creator, always an admin). */
    admins: text('admins').array().notNull().default(sql`'{}'`),
    /** How often the invite code was revoked: the code is derived from the group's id and this. */
    inviteVersion: integer('invite_version').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('sandbox_groups_device_idx').on(t.deviceId)],
);

export const schema = {
  plans,
  accounts,
  users,
  setupCodes,
  apiTokens,
  usagePeriods,
  contacts,
  groups,
  groupMembers,
  devices,
  bulkJobs,
  messages,
  idempotencyKeys,
  events,
  webhookEndpoints,
  webhookDeliveries,
  webhookAttempts,
  sandboxQrCodes,
  sandboxPhones,
  sandboxMessages,
  sandboxIncoming,
  sandboxReads,
  messageActions,
  media,
  mediaChunks,
  chats,
  numberChecks,
  deviceRequests,
  sandboxGroups,
};
export type Schema = typeof schema;
