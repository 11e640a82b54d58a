/** Conversations (DESIGN.md section 10): chats, a chat's history, read and presence, and number look-ups. */
import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ConversationService } from '../../conversations/conversation-service.js';
import { MAX_NUMBER_CHECKS } from '../../conversations/conversation-service.js';
import { ChatDetailSchema, ChatSchema, ChatTypeSchema, NumberCheckSchema, PresenceStateSchema } from '../../conversations/chat-record.js';
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
