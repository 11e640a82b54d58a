/**
 * The one definition of the message and bulk-job records: the fields, their order, their types
 * and their API descriptions. Everything else derives from these schemas:
 *
 * - the routes answer with them (src/http/routes/messages.ts), so Fastify validates nothing
 *   twice and serialises in this field order, timestamps as ISO 8601 UTC with milliseconds;
 * - `Message`/`BulkJob` (Static: timestamps are Date) are what the mappers toMessage/toBulkJob
 *   in message-model.ts return: the one place that maps columns to fields;
 * - `MessageJson`/`BulkJobJson` (timestamps are strings) are the records as JSON, which the
 *   dashboard (dashboard/src/types.ts) and the tests (test/messaging-helpers.ts) import as types;
 * - the SQL functions that build the same records for event payloads in the statement that
 *   changes the state (waygate_message_json, waygate_job_json in drizzle/repeatable/) are kept
 *   equal to the mappers by test/record-contract.test.ts.
 *
 * Imports nothing but typebox (and the record pieces in src/platform/record-schema.ts), so the
 * dashboard can import its types (type-only) without pulling in server code.
 */
import Type, { type Static } from 'typebox';
import { DateTime, NullableDateTime, type Jsonified } from '../platform/record-schema.js';
import { MAX_ADDRESS_LENGTH, MAX_NAME_LENGTH } from './message-limits.js';
const NullableString = Type.Union([Type.String(), Type.Null()]);

export const MessageStatusSchema = Type.Enum(['SCHEDULED', 'QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED', 'RECEIVED'], { type: 'string', title: 'MessageStatus' });
export const MessageTypeSchema = Type.Enum(['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT', 'AUDIO', 'STICKER', 'LOCATION', 'CONTACT', 'POLL', 'REACTION'], { type: 'string', title: 'MessageType' });
export const BulkJobStatusSchema = Type.Enum(['SCHEDULED', 'PROCESSING', 'COMPLETED', 'CANCELLED'], { type: 'string', title: 'BulkJobStatus' });

/** Where the file of an incoming media message is: in Waygate's media store, never stored, or pruned. */
export const MediaStatusSchema = Type.Enum(['STORED', 'FAILED', 'EXPIRED'], {
  type: 'string',
  title: 'MediaStatus',
  description:
    'STORED: GET /messages/:id/media serves it (mediaUrl); FAILED: the download failed after its retries (see error); EXPIRED: pruned after MEDIA_RETENTION_DAYS',
});

export const IncomingMediaSchema = Type.Object(
  {
    mimeType: Type.String(),
    fileName: Type.Optional(Type.String()),
    sizeBytes: Type.Optional(Type.Integer()),
    seconds: Type.Optional(Type.Number({ description: 'Length of audio or video' })),
    status: Type.Optional(MediaStatusSchema),
    sha256: Type.Optional(Type.String({ description: 'Hex SHA-256 of the stored file (its ETag)' })),
    error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, { description: 'Why the file could not be stored (FAILED)' })),
  },
  { title: 'IncomingMedia', description: 'Absent status: received before Waygate stored files' },
);

/** A LOCATION message's place. */
export const LocationSchema = Type.Object({
  latitude: Type.Number({ minimum: -90, maximum: 90 }),
  longitude: Type.Number({ minimum: -180, maximum: 180 }),
  name: Type.Optional(Type.String({ maxLength: MAX_NAME_LENGTH })),
  address: Type.Optional(Type.String({ maxLength: MAX_ADDRESS_LENGTH })),
}, { title: 'Location' });

/** One card of a CONTACT message (the vCard is built from it). */
export const ContactCardSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
  phoneNumber: Type.String({ minLength: 1, maxLength: 40, description: 'E.164, as digits' }),
}, { title: 'ContactCard' });

/** A reaction: the emoji on a message ("" removes the reaction). */
export const ReactionSchema = Type.Object({
  messageId: Type.Union([Type.String(), Type.Null()], { description: 'The message reacted to; null: a message Waygate does not know' }),
  emoji: Type.String({ description: 'Empty: the reaction was removed' }),
}, { title: 'Reaction' });

/** A POLL message's choices and their tally (every voter's current choice). */
export const PollRecordSchema = Type.Object({
  options: Type.Array(Type.String()),
  multiple: Type.Boolean({ description: 'Voters may pick more than one option' }),
  votes: Type.Array(Type.Object({ option: Type.String(), count: Type.Integer() })),
}, { title: 'Poll' });

/** A message, sent or received. The API writes the fields in this order. */
export const MessageSchema = Type.Object({
  id: Type.String(),
  direction: Type.Union([Type.Literal('out'), Type.Literal('in')]),
  deviceId: Type.String(),
  jobId: NullableString,
  to: Type.Union([Type.String(), Type.Null()], { description: 'Recipient of an outgoing message' }),
  from: Type.Union([Type.String(), Type.Null()], { description: 'Sender of an incoming message' }),
  type: MessageTypeSchema,
  content: Type.String({ description: 'Text, or the caption of a media message' }),
  mediaUrl: Type.Union([Type.String(), Type.Null()], {
    description: 'Outgoing: the URL the file was fetched from. Incoming: /messages/{id}/media while the file is STORED, else null',
  }),
  media: Type.Union([IncomingMediaSchema, Type.Null()], {
    description: 'An incoming media message: the file (type, name, size) and whether Waygate stored it; mediaUrl is where to download it',
  }),
  status: MessageStatusSchema,
  attempts: Type.Integer(),
  error: Type.Union([Type.Object({ code: Type.String(), message: Type.String() }), Type.Null()]),
  scheduledAt: NullableDateTime,
  createdAt: DateTime,
  queuedAt: NullableDateTime,
  sentAt: NullableDateTime,
  deliveredAt: NullableDateTime,
  readAt: NullableDateTime,
  failedAt: NullableDateTime,
  cancelledAt: NullableDateTime,
  receivedAt: NullableDateTime,
  fromLid: Type.Union([Type.String(), Type.Null()], {
    description: "Incoming on WhatsApp: the sender's LID (<digits>@lid) when WhatsApp addressed them by it; `from` is their number when known",
  }),
  location: Type.Union([LocationSchema, Type.Null()], { description: 'LOCATION' }),
  contacts: Type.Union([Type.Array(ContactCardSchema), Type.Null()], { description: 'CONTACT' }),
  poll: Type.Union([PollRecordSchema, Type.Null()], { description: 'POLL (content is the question)' }),
  reaction: Type.Union([ReactionSchema, Type.Null()], { description: 'REACTION' }),
  replyTo: Type.Union([Type.String(), Type.Null()], { description: 'The message this one quotes (null: none, or one Waygate does not know)' }),
  mentions: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'Phone numbers mentioned' }),
  editedAt: Type.Union([DateTime, Type.Null()], {
    description: 'When the text or caption was last edited (PATCH /messages/:id, or the sender of an incoming message); `content` is the edited text',
  }),
  deletedAt: Type.Union([DateTime, Type.Null()], {
    description: 'When the message was deleted for everyone (DELETE /messages/:id, or by its sender); `content` is kept',
  }),
  chatId: Type.String({ description: 'The chat it belongs to (GET /chats/:chatId): the other party, or the group (<digits>@g.us)' }),
}, { title: 'Message' });

/** A bulk job with its live counters. The API writes the fields in this order. */
export const BulkJobSchema = Type.Object({
  id: Type.String(),
  status: BulkJobStatusSchema,
  deviceId: Type.String(),
  type: MessageTypeSchema,
  totalContacts: Type.Integer(),
  sentCount: Type.Integer({ description: 'Messages SENT or further along' }),
  failedCount: Type.Integer(),
  deliveredCount: Type.Integer(),
  readCount: Type.Integer(),
  cancelledCount: Type.Integer(),
  scheduledAt: NullableDateTime,
  createdAt: DateTime,
  completedAt: NullableDateTime,
  cancelledAt: NullableDateTime,
}, { title: 'BulkJob' });

export type MessageStatus = Static<typeof MessageStatusSchema>;
export type MessageType = Static<typeof MessageTypeSchema>;
export type BulkJobStatus = Static<typeof BulkJobStatusSchema>;
export type MediaStatus = Static<typeof MediaStatusSchema>;
/** The file of an incoming media message, as the record shows it (messages.media). */
export type MessageMedia = Static<typeof IncomingMediaSchema>;
export type Location = Static<typeof LocationSchema>;
export type ContactCard = Static<typeof ContactCardSchema>;
export type Reaction = Static<typeof ReactionSchema>;

/** A message on the server (timestamps are Date). */
export type Message = Static<typeof MessageSchema>;
/** A message as the API and the webhook events show it (timestamps are ISO strings). */
export type MessageJson = Jsonified<Message>;
/** A bulk job on the server (timestamps are Date). */
export type BulkJob = Static<typeof BulkJobSchema>;
/** A bulk job as the API and the webhook events show it (timestamps are ISO strings). */
export type BulkJobJson = Jsonified<BulkJob>;
