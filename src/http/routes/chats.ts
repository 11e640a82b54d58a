/**
 * Conversations (DESIGN.md section 10): chats, a chat's history, read and presence, number
 * look-ups, and the WhatsApp groups a device administers.
 */
import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ConversationService } from '../../conversations/conversation-service.js';
import { MAX_GROUP_CHANGE, MAX_NUMBER_CHECKS } from '../../conversations/conversation-service.js';
import { WHATSAPP_GROUP_NAME_MAX } from '../../platform/text-limits.js';
import {
  ChatDetailSchema,
  ChatSchema,
  ChatTypeSchema,
  GroupInviteSchema,
  NumberCheckSchema,
  ParticipantActionSchema,
  ParticipantsChangeSchema,
  PresenceStateSchema,
} from '../../conversations/chat-record.js';
import { MessageSchema } from '../../messaging/message-record.js';
import { auth } from '../auth.js';
import { errorResponses, IdString, ListingMeta, ListingQuery, successData, type RouteApp } from '../schemas.js';

const ChatParams = Type.Object({ chatId: IdString({ description: 'A number, <digits>@lid, or a group id <digits>@g.us' }) });
const DeviceQuery = {
  deviceId: Type.Optional(IdString({ description: 'The device the chat belongs to; required when the account has more than one' })),
};
const Limit = Type.Optional(Type.Integer({ minimum: 1, default: 50, description: 'Items per page; values above 100 are clamped to 100' }));

export const chatRoutes: FastifyPluginAsyncTypebox<{ conversations: ConversationService }> = async (app, { conversations }) => {
  chatReadingRoutes(app, conversations);
  chatActionRoutes(app, conversations);
  groupRoutes(app, conversations);
  numberCheckRoute(app, conversations);
};

/** The chats and their history: listed, read, paged back. */
function chatReadingRoutes(app: RouteApp, conversations: ConversationService): void {
  app.get(
    '/chats',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['chats'], operationId: 'listChats', description: 'The chats of the devices of the account (people and WhatsApp groups), most recent first, with unread counts; page or cursor.',
        summary: "List the chats of the account's devices, newest activity first",
        querystring: Type.Object(
          {
            ...ListingQuery,
            deviceId: Type.Optional(IdString()),
            type: Type.Optional(ChatTypeSchema),
            search: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A case-insensitive part of the number, group id or name' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ success: Type.Literal(true), data: Type.Array(ChatSchema), meta: ListingMeta }), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, ...rest } = request.query;
      return { success: true as const, ...(await conversations.list(auth(request).accountId, { page, limit, ...rest })) };
    },
  );

  app.get(
    '/chats/:chatId',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['chats'], operationId: 'getChat', description: 'One chat, with the participants of a group chat.',
        summary: 'Read a chat; a group chat lists its participants',
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        response: { 200: successData(ChatDetailSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => ({ success: true as const, data: await conversations.get(auth(request).accountId, request.params.chatId, request.query.deviceId) }),
  );

  app.get(
    '/chats/:chatId/messages',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['chats'], operationId: 'listChatMessages', description: 'The messages of one chat, newest first, by keyset cursor: pages back through any history without gaps or repeats.',
        summary: "A chat's messages, sent and received, newest first (keyset: pass meta.nextBefore as before)",
        params: ChatParams,
        querystring: Type.Object(
          { ...DeviceQuery, before: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'meta.nextBefore of the previous page' })), limit: Limit },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            data: Type.Array(MessageSchema),
            meta: Type.Object({ limit: Type.Integer(), nextBefore: Type.Union([Type.String(), Type.Null()], { description: 'Pass as before for older messages; null at the first message' }) }),
          }),
          ...errorResponses('FORBIDDEN', 'NOT_FOUND'),
        },
      },
    },
    async (request) => {
      const { limit = 50, ...rest } = request.query;
      return { success: true as const, ...(await conversations.messages(auth(request).accountId, request.params.chatId, { limit, ...rest })) };
    },
  );
}

/** What the device does in a chat: marks it read, shows typing or recording. */
function chatActionRoutes(app: RouteApp, conversations: ConversationService): void {
  app.post(
    '/chats/:chatId/read',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'markChatRead', description: 'Marks the chat read: its unread count becomes 0 and read receipts go to the network for its unread messages.',
        summary: 'Mark everything in the chat read (unread count 0; read receipts go to the network)',
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        response: { 200: successData(ChatDetailSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => ({ success: true as const, data: await conversations.read(auth(request).accountId, request.params.chatId, request.query.deviceId) }),
  );

  app.post(
    '/chats/:chatId/presence',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'sendChatPresence', description: 'Shows typing, recording or paused in the chat, through the worker holding the device.',
        summary: 'Show the device typing, recording a voice note, or neither (paused) in the chat',
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        body: Type.Object(
          { state: PresenceStateSchema, ...DeviceQuery },
          { additionalProperties: false },
        ),
        response: {
          200: successData(Type.Object({ chatId: Type.String(), deviceId: Type.String(), state: Type.String() })),
          ...errorResponses('FORBIDDEN', 'NOT_FOUND'),
        },
      },
    },
    async (request) => ({
      success: true as const,
      data: await conversations.presence(auth(request).accountId, request.params.chatId, request.query.deviceId ?? request.body.deviceId, request.body.state),
    }),
  );
}

const GroupName = Type.String({ minLength: 1, maxLength: WHATSAPP_GROUP_NAME_MAX, description: "The group's name (WhatsApp's subject)" });
const GroupNumbers = (description: string) => Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { minItems: 1, maxItems: MAX_GROUP_CHANGE, description });
/** What the network may answer a group admin's request with, beside the route's own refusals. */
const GROUP_ERRORS = ['FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'SERVICE_UNAVAILABLE'] as const;
const NETWORK_NOTE =
  'Asked of the network through the worker holding the device, which must be connected; 409 CONFLICT when the network refuses (the device is not an admin, or not in the group), 503 when the device does not answer within 30 s.';

/** WhatsApp groups the device administers: created, renamed, members changed, invite link, left. */
function groupRoutes(app: RouteApp, conversations: ConversationService): void {
  app.post(
    '/chats',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'createGroupChat', description: `Creates a WhatsApp group with the device's number as its admin and answers its chat. Numbers not on WhatsApp are left out, as WhatsApp does. ${NETWORK_NOTE}`,
        summary: 'Create a WhatsApp group chat',
        body: Type.Object(
          {
            name: GroupName,
            participants: GroupNumbers("The members besides the device's number"),
            deviceId: Type.Optional(IdString({ description: "Create it from this device (default: the account's oldest connected one)" })),
          },
          { additionalProperties: false },
        ),
        response: { 201: successData(ChatDetailSchema), ...errorResponses('NO_CONNECTED_DEVICE', ...GROUP_ERRORS) },
      },
    },
    async (request, reply) => reply.status(201).send({ success: true as const, data: await conversations.createGroup(auth(request).accountId, request.body) }),
  );

  app.patch(
    '/chats/:chatId',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'renameGroupChat', description: `Renames a WhatsApp group (the device must be an admin). ${NETWORK_NOTE}`,
        summary: 'Rename a group chat',
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        body: Type.Object({ name: GroupName, ...DeviceQuery }, { additionalProperties: false }),
        response: { 200: successData(ChatDetailSchema), ...errorResponses(...GROUP_ERRORS) },
      },
    },
    async (request) => ({
      success: true as const,
      data: await conversations.renameGroup(auth(request).accountId, request.params.chatId, request.query.deviceId ?? request.body.deviceId, request.body.name),
    }),
  );

  app.post(
    '/chats/:chatId/participants',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'changeGroupParticipants',
        description: `Adds, removes, promotes or demotes members of a WhatsApp group (the device must be an admin). The network answers each number on its own: \`results\` says which were changed and why others were not (someone whose privacy settings refuse being added gets the invite link instead). ${NETWORK_NOTE}`,
        summary: "Add, remove, promote or demote a group chat's participants",
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        body: Type.Object({ action: ParticipantActionSchema, phoneNumbers: GroupNumbers('The members to change'), ...DeviceQuery }, { additionalProperties: false }),
        response: { 200: successData(ParticipantsChangeSchema), ...errorResponses(...GROUP_ERRORS) },
      },
    },
    async (request) => ({
      success: true as const,
      data: await conversations.changeParticipants(auth(request).accountId, request.params.chatId, request.query.deviceId ?? request.body.deviceId, request.body),
    }),
  );

  app.get(
    '/chats/:chatId/invite',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'getGroupInvite', description: `The invite link of a WhatsApp group (the device must be an admin). ${NETWORK_NOTE}`,
        summary: "A group chat's invite link",
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        response: { 200: successData(GroupInviteSchema), ...errorResponses(...GROUP_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, data: await conversations.inviteLink(auth(request).accountId, request.params.chatId, request.query.deviceId) }),
  );

  app.post(
    '/chats/:chatId/invite/revoke',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'revokeGroupInvite', description: `Revokes a WhatsApp group's invite link and answers the new one (the device must be an admin); links with the old code stop working. ${NETWORK_NOTE}`,
        summary: "Revoke a group chat's invite link for a new one",
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        response: { 200: successData(GroupInviteSchema), ...errorResponses(...GROUP_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, data: await conversations.inviteLink(auth(request).accountId, request.params.chatId, request.query.deviceId, true) }),
  );

  app.post(
    '/chats/:chatId/leave',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['chats'], operationId: 'leaveGroupChat', description: `The device's number leaves a WhatsApp group. The chat and its history stay, without the device among the participants; sending into it fails. ${NETWORK_NOTE}`,
        summary: 'Leave a group chat',
        params: ChatParams,
        querystring: Type.Object(DeviceQuery, { additionalProperties: false }),
        response: { 200: successData(ChatDetailSchema), ...errorResponses(...GROUP_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, data: await conversations.leaveGroup(auth(request).accountId, request.params.chatId, request.query.deviceId) }),
  );
}

/** POST /numbers/check: which numbers have WhatsApp. */
function numberCheckRoute(app: RouteApp, conversations: ConversationService): void {
  app.post(
    '/numbers/check',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['numbers'], operationId: 'checkNumbers', description: 'Which of up to 50 numbers have WhatsApp (onNetwork), answered from a 7-day cache or asked of the network, paced per device.',
        summary: `Whether numbers have WhatsApp (at most ${MAX_NUMBER_CHECKS}; answers cached 7 days; paced per device)`,
        body: Type.Object(
          {
            phoneNumbers: Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { minItems: 1, maxItems: MAX_NUMBER_CHECKS }),
            deviceId: Type.Optional(IdString({ description: "Ask through this device (default: the account's oldest connected one)" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: successData(Type.Array(NumberCheckSchema)), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'NO_CONNECTED_DEVICE', 'SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => ({ success: true as const, data: await conversations.checkNumbers(auth(request).accountId, request.body) }),
  );
}
