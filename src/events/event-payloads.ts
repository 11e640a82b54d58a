/**
 * What each event type carries in `data`, for the OpenAPI document's `webhooks` section and for
 * typed consumers. The records (message, device, bulk job, a chat's presence) are their own single
 * schemas; the three payloads below are built in SQL (message-store.ts: message.reaction and
 * poll.vote) and in webhook-service.ts (webhook.test) with exactly these fields. Imports nothing
 * but typebox and record schemas, so a client can import it without the server.
 */
import Type, { type TSchema } from 'typebox';
import { DateTime } from '../platform/record-schema.js';
import { BulkJobSchema, MessageSchema } from '../messaging/message-record.js';
import { DeviceSchema } from '../devices/device-record.js';
import { ChatPresenceSchema } from '../conversations/chat-record.js';
import type { EventType } from './event-store.js';

export const MessageReactionDataSchema = Type.Object(
  {
    messageId: Type.String({ description: 'The message of the account reacted to' }),
    deviceId: Type.String(),
    from: Type.Union([Type.String(), Type.Null()], { description: "The reacting person's number, when known" }),
    fromLid: Type.Union([Type.String(), Type.Null()]),
    emoji: Type.String({ description: 'Empty: the reaction was removed' }),
    reactionId: Type.String({ description: 'The stored REACTION message' }),
    at: DateTime,
  },
  { title: 'MessageReactionData' },
);

export const PollVoteDataSchema = Type.Object(
  {
    messageId: Type.String({ description: 'The POLL message voted on' }),
    voter: Type.String({ description: "The voter's number" }),
    options: Type.Array(Type.String(), { description: "The voter's current choice; empty: the vote was taken back" }),
  },
  { title: 'PollVoteData' },
);

export const WebhookTestDataSchema = Type.Object(
  { endpointId: Type.String(), message: Type.String() },
  { title: 'WebhookTestData' },
);

/** Each event type, what it means, and the schema of its `data`. */
export const EVENT_PAYLOADS: Record<EventType, { summary: string; data: TSchema }> = {
  'message.received': { summary: 'An incoming message (every kind), stored before it is acknowledged to the network', data: MessageSchema },
  'message.status': { summary: 'A sent message changed status: SENT, DELIVERED, READ or FAILED (bulk messages carry their jobId)', data: MessageSchema },
  'message.reaction': { summary: 'Someone reacted to a message of the account, or removed their reaction (emoji "")', data: MessageReactionDataSchema },
  'message.edited': { summary: 'A message was edited (PATCH /messages/{id}, or by the sender of an incoming one): the record with its new content and editedAt', data: MessageSchema },
  'message.deleted': { summary: 'A message was deleted for everyone (DELETE /messages/{id}, or by its sender): the record with deletedAt', data: MessageSchema },
  'poll.vote': { summary: "A vote on a poll of the account: the voter's current choice", data: PollVoteDataSchema },
  'chat.presence': {
    summary: "A contact shows typing or recording in a chat, or went online or offline (WhatsApp: after the device showed presence in, or read, the contact's chat)",
    data: ChatPresenceSchema,
  },
  'device.status': { summary: 'A device changed status (PENDING, CONNECTED, DISCONNECTED, LOGGED_OUT)', data: DeviceSchema },
  'bulk_job.completed': { summary: 'Every message of a bulk job is final', data: BulkJobSchema },
  'bulk_job.cancelled': { summary: 'A bulk job was cancelled', data: BulkJobSchema },
  'webhook.test': { summary: 'A test event (POST /webhooks/{id}/test), to one endpoint only; its seq is null', data: WebhookTestDataSchema },
};
