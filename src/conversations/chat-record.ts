/**
 * The one definition of the chat record (DESIGN.md section 10): the routes answer with these
 * schemas, `toChat` in chat-store.ts returns their type, the dashboard imports the JSON type.
 * Imports nothing but typebox and the record pieces, so the dashboard can import it type-only.
 */
import Type, { type Static } from 'typebox';
import { DateTime, type Jsonified } from '../platform/record-schema.js';
import { MessageSchema } from '../messaging/message-record.js';

export const ChatTypeSchema = Type.Union([Type.Literal('direct'), Type.Literal('group')]);

/** What a device shows in a chat (the network's PresenceState). */
export const PresenceStateSchema = Type.Union([Type.Literal('typing'), Type.Literal('recording'), Type.Literal('paused')]);

/**
 * What a contact shows: typing or recording in a chat, or online and offline (WhatsApp tells
 * these only for a contact whose presence the device subscribed to, which its session does when
 * it shows presence in, or reads, the contact's chat).
 */
export const ContactPresenceStateSchema = Type.Union([Type.Literal('typing'), Type.Literal('recording'), Type.Literal('online'), Type.Literal('offline')]);
export type ContactPresenceState = Static<typeof ContactPresenceStateSchema>;

/** The data of a chat.presence event. */
export const ChatPresenceSchema = Type.Object(
  {
    deviceId: Type.String(),
    chatId: Type.String({ description: 'The chat it shows in: the person (digits, or <digits>@lid while the network hides the number), or a group (<digits>@g.us)' }),
    from: Type.Union([Type.String(), Type.Null()], { description: "The person's number, when known" }),
    fromLid: Type.Union([Type.String(), Type.Null()], { description: "WhatsApp: the person's LID (<digits>@lid), when known" }),
    state: ContactPresenceStateSchema,
    lastSeen: Type.Union([DateTime, Type.Null()], { description: 'offline: when they were last online, if they share it' }),
    at: DateTime,
  },
  { title: 'ChatPresenceData' },
);
export type ChatPresence = Static<typeof ChatPresenceSchema>;

export const ChatSchema = Type.Object({
  id: Type.String({ description: 'Direct: the number (digits), or <digits>@lid while the network hides it; group: <digits>@g.us' }),
  deviceId: Type.String(),
  type: ChatTypeSchema,
  name: Type.Union([Type.String(), Type.Null()], { description: "A group's subject; a person's name from the account's contacts" }),
  phoneNumber: Type.Union([Type.String(), Type.Null()], { description: 'Direct chats: the number, when known (also once a LID is mapped to it)' }),
  lid: Type.Union([Type.String(), Type.Null()], { description: "Direct chats on WhatsApp: the person's LID (<digits>@lid), when known" }),
  lastMessage: Type.Union([MessageSchema, Type.Null()]),
  unreadCount: Type.Integer(),
  participantsCount: Type.Union([Type.Integer(), Type.Null()], { description: "Groups: members, the device's own number included" }),
  updatedAt: DateTime,
});

export const ParticipantSchema = Type.Object({
  phoneNumber: Type.String({ description: 'The number (digits), or <digits>@lid while the network hides it' }),
  lid: Type.Union([Type.String(), Type.Null()]),
  admin: Type.Boolean(),
});

export const ChatDetailSchema = Type.Object({
  ...ChatSchema.properties,
  participants: Type.Union([Type.Array(ParticipantSchema), Type.Null()], { description: 'Groups: every member; null for a direct chat' }),
});

export const NumberCheckSchema = Type.Object({
  phoneNumber: Type.String(),
  onNetwork: Type.Boolean(),
  chatId: Type.Union([Type.String(), Type.Null()], { description: 'The chat id to send to (null when not on the network)' }),
});

export const ParticipantActionSchema = Type.Union([Type.Literal('add'), Type.Literal('remove'), Type.Literal('promote'), Type.Literal('demote')], {
  description: 'add or remove members; promote to admin or demote',
});

export const ParticipantOutcomeSchema = Type.Object({
  phoneNumber: Type.String(),
  ok: Type.Boolean(),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'Why the network refused this number (null when ok)' }),
});

export const ParticipantsChangeSchema = Type.Object({
  chat: ChatDetailSchema,
  results: Type.Array(ParticipantOutcomeSchema, { description: 'One per number asked (a repeated one once), in order' }),
});

export const GroupInviteSchema = Type.Object({
  chatId: Type.String(),
  deviceId: Type.String(),
  code: Type.String(),
  link: Type.String({ description: 'https://chat.whatsapp.com/<code>' }),
});

export type ChatType = Static<typeof ChatTypeSchema>;
export type ParticipantAction = Static<typeof ParticipantActionSchema>;
export type ParticipantOutcome = Static<typeof ParticipantOutcomeSchema>;
export type GroupInvite = Static<typeof GroupInviteSchema>;
export type ParticipantsChange = Static<typeof ParticipantsChangeSchema>;
export type ParticipantsChangeJson = Jsonified<ParticipantsChange>;
export type Chat = Static<typeof ChatSchema>;
export type ChatDetail = Static<typeof ChatDetailSchema>;
export type Participant = Static<typeof ParticipantSchema>;
export type NumberCheckResult = Static<typeof NumberCheckSchema>;
export type ChatJson = Jsonified<Chat>;
export type ChatDetailJson = Jsonified<ChatDetail>;
