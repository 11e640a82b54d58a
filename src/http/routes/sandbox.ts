import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../platform/database.js';
import { validatePhone } from '../../directory/contacts.js';
import type { DeviceChatFilter, SandboxWorld } from '../../network/sandbox/world.js';
import { ContactPresenceStateSchema, PresenceStateSchema } from '../../conversations/chat-record.js';
import { normalizeChatId } from '../../conversations/chat-ids.js';
import { MessageTypeSchema } from '../../messaging/message-record.js';
import { MAX_MEDIA_URL_LENGTH, MAX_TEXT_LENGTH, POLL_OPTIONS } from '../../messaging/message-limits.js';
import { DeviceStore } from '../../devices/device-store.js';
import { AppError, validationError } from '../../platform/errors.js';
import { checkUrlShape, UnsafeUrlError } from '../../outbound/ssrf.js';
import { auth } from '../auth.js';
import { changePayload, incomingPayload, votePayload } from './sandbox-payloads.js';
import { errorResponses, IdString, IdParams, KindBodyFields, NullableTimestamp, PageQuery, successData, successPage, Timestamp, type RouteApp } from '../schemas.js';

const Phone = Type.String({ minLength: 1, maxLength: 40 });

/** A media URL as the network would hand it over: http(s) only (no file:, javascript:, data:). */
function httpUrl(raw: string, field: string): string {
  try {
    return checkUrlShape(raw).toString();
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw validationError(field, error.message);
    throw error;
  }
}

const SandboxPresence = Type.Object({
  deviceId: Type.String(),
  chat: Type.String({ description: "The other party's number, or a group chat (<digits>@g.us)" }),
  state: PresenceStateSchema,
  at: Timestamp,
});

/** The filters of the sandbox's listings of what a device did: a device, and a chat (a number in any form, or a group chat). */
const DeviceChatQuery = Type.Object(
  {
    ...PageQuery,
    deviceId: Type.Optional(Type.String({ maxLength: 100 })),
    chat: Type.Optional(IdString({ description: "The other party's number (or <digits>@lid), or a group chat (<digits>@g.us)" })),
  },
  { additionalProperties: false },
);

function deviceChatFilter({ deviceId, chat }: DeviceChatFilter): DeviceChatFilter {
  if (chat === undefined) return { deviceId };
  const id = normalizeChatId(chat);
  if (!id) throw validationError('chat', 'is not a phone number or a chat id (<digits>@g.us, <digits>@lid)');
  return { deviceId, chat: id };
}

const SandboxRead = Type.Object({
  deviceId: Type.String(),
  networkMessageId: Type.String({ description: 'The message read, as POST /sandbox/incoming answered it' }),
  chat: Type.Union([Type.String(), Type.Null()], { description: "The sender's number, or a group chat (<digits>@g.us)" }),
  readAt: Timestamp,
});

const SandboxMessage = Type.Object({
  networkMessageId: Type.String(),
  deviceId: Type.String(),
  to: Type.String(),
  groupMembers: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'A message into a group chat: the members it reached, one copy each' }),
  type: Type.String(),
  content: Type.String(),
  payload: Type.Union(
    [
      Type.Object({
        voice: Type.Optional(Type.Boolean()),
        location: Type.Optional(KindBodyFields.location),
        contacts: Type.Optional(KindBodyFields.contacts),
        poll: Type.Optional(Type.Object({ options: Type.Array(Type.String()), multiple: Type.Boolean() })),
        reaction: Type.Optional(Type.Object({ networkMessageId: Type.String(), emoji: Type.String() })),
        replyTo: Type.Optional(Type.String({ description: 'The network id of the message quoted' })),
        mentions: Type.Optional(Type.Array(Type.String())),
      }),
      Type.Null(),
    ],
    { description: 'What the message carried beyond type and content (replies and reactions by network message id)' },
  ),
  editedAt: Type.Union([Timestamp, Type.Null()], { description: 'The device edited it (content is the latest text)' }),
  deletedAt: Type.Union([Timestamp, Type.Null()], { description: 'The device deleted it for everyone' }),
  mediaBytes: Type.Union([Type.Integer(), Type.Null()]),
  mediaType: Type.Union([Type.String(), Type.Null()]),
  fileName: Type.Union([Type.String(), Type.Null()]),
  sendCalls: Type.Integer({ description: 'How many times the gateway handed this message to the network' }),
  delivered: Type.Integer({ description: 'Copies that reached the phone; never more than 1' }),
  read: Type.Integer(),
  acceptedAt: Timestamp,
  deliveredAt: NullableTimestamp,
  readAt: NullableTimestamp,
}, { title: 'SandboxMessage' });

/** What POST /sandbox/incoming plays: a message, or with `vote`, `edit`, `delete` or `presence` what the sender does instead. */
const IncomingBody = Type.Object(
  {
    deviceId: IdString(),
    from: Phone,
    type: Type.Optional(MessageTypeSchema),
    content: Type.String({ maxLength: MAX_TEXT_LENGTH }),
    mediaUrl: Type.Optional(Type.String({ maxLength: MAX_MEDIA_URL_LENGTH, description: 'http(s) URL' })),
    ...KindBodyFields,
    group: Type.Optional(
      IdString({ description: 'A group chat of the device (POST /sandbox/groups) that `from`, a member, writes in' }),
    ),
    presence: Type.Optional({
      ...ContactPresenceStateSchema,
      description:
        "Play what the sender shows in their chat with the device, or (with `group`) in the group chat: typing, recording, online or offline (a chat.presence event; give no type and content \"\")",
    }),
    vote: Type.Optional(
      Type.Object(
        {
          messageId: IdString(),
          options: Type.Array(Type.String({ maxLength: POLL_OPTIONS.maxLength }), { maxItems: POLL_OPTIONS.max, description: 'The current choice; [] takes the vote back' }),
        },
        {
          additionalProperties: false,
          description: "Play the sender's vote on a POLL the device sent them, or (with `group`) sent into a group chat they are a member of (then give no type and content \"\")",
        },
      ),
    ),
    edit: Type.Optional(
      Type.Object(
        { messageId: IdString(), content: Type.String({ maxLength: MAX_TEXT_LENGTH, description: 'The new text or caption' }) },
        {
          additionalProperties: false,
          description: 'Play the sender editing a message they sent the device (within 15 minutes of it, else 409 NOT_EDITABLE; give no type and content "")',
        },
      ),
    ),
    delete: Type.Optional(
      Type.Object(
        { messageId: IdString() },
        {
          additionalProperties: false,
          description: 'Play the sender deleting for everyone a message they sent the device (within 48 hours of it, else 409 NOT_DELETABLE; give no type and content "")',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

/** What the sandbox's routes work with: the network, the database, and the check that a device is the caller's. */
interface SandboxDeps {
  world: SandboxWorld;
  database: Database;
  devices: DeviceStore;
  ownDevice(accountId: string, deviceId: string): Promise<void>;
}

/** Test helpers that play the phone and the network. Only with NETWORK=sandbox; they touch only the caller's account. */
export const sandboxRoutes: FastifyPluginAsyncTypebox<{ world: SandboxWorld; database: Database }> = async (app, { world, database }) => {
  const devices = new DeviceStore(database);
  const ownDevice = async (accountId: string, deviceId: string): Promise<void> => {
    if (!(await devices.owns(accountId, deviceId))) throw new AppError('NOT_FOUND', 'Device not found');
  };
  const deps: SandboxDeps = { world, database, devices, ownDevice };
  phoneRoutes(app, deps);
  networkRoutes(app, deps);
  receivedRoutes(app, deps);
};

/** The phone: scanning a device's QR code, and sending it messages (or voting, editing, deleting, showing presence). */
function phoneRoutes(app: RouteApp, { world, database, devices, ownDevice }: SandboxDeps): void {
  app.post(
    '/sandbox/scan',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxScan',
        summary: 'Scan a QR code (sandbox)',
        description: 'Play the phone scanning a QR code: the device becomes CONNECTED as phoneNumber.',
        body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 200 }), phoneNumber: Phone }, { additionalProperties: false }),
        response: { 200: successData(Type.Object({ deviceId: Type.String(), phoneNumber: Type.String() })), ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      const { accountId } = auth(request);
      const phoneNumber = validatePhone(request.body.phoneNumber, 'phoneNumber');
      const shownFor = await world.qrCodeDevice(request.body.code);
      if (!shownFor || !(await devices.owns(accountId, shownFor))) throw new AppError('NOT_FOUND', 'No device of this account shows that QR code');
      const result = await world.scan(request.body.code, phoneNumber);
      if (!result.ok) {
        throw new AppError('VALIDATION_ERROR', result.reason === 'expired' ? 'That QR code has expired; scan the current one' : 'Unknown QR code', [
          { field: 'code', message: result.reason === 'expired' ? 'has expired' : 'is not a code the network showed' },
        ]);
      }
      return { success: true as const, data: { deviceId: result.deviceId, phoneNumber } };
    },
  );

  app.post(
    '/sandbox/incoming',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxIncoming',
        summary: 'Receive a message (sandbox)',
        description: 'Play an incoming message to a device.',
        body: IncomingBody,
        response: { 202: successData(Type.Object({ networkMessageId: Type.String() })), ...errorResponses('NOT_FOUND', 'NOT_EDITABLE', 'NOT_DELETABLE') },
      },
    },
    async (request, reply) => {
      const { accountId } = auth(request);
      await ownDevice(accountId, request.body.deviceId);
      const from = validatePhone(request.body.from, 'from');
      const type = request.body.type ?? 'TEXT';
      const { group, edit, delete: remove, presence } = request.body;
      if (group !== undefined) {
        const [known] = await world.groups(request.body.deviceId, [group]);
        if (!known) throw validationError('group', 'is not a group chat of the device (POST /sandbox/groups)');
        if (!known.members.slice(1).includes(from)) throw validationError('from', 'is not a member of the group');
        if (edit || remove) throw validationError(edit ? 'edit' : 'delete', 'is not played in a group chat');
      }
      if (presence && (request.body.vote || edit || remove)) throw validationError('presence', 'is played alone, without vote, edit or delete');
      const payload = presence
        ? { presence }
        : request.body.vote
          ? await votePayload(database, accountId, request.body.deviceId, group ?? from, request.body.vote, request.body)
          : edit
            ? await changePayload(database, accountId, request.body.deviceId, from, { edit }, request.body)
            : remove
              ? await changePayload(database, accountId, request.body.deviceId, from, { delete: remove }, request.body)
              : await incomingPayload(database, accountId, request.body.deviceId, group ?? from, type, request.body);
      const networkMessageId = await world.addIncoming({
        deviceId: request.body.deviceId,
        from,
        type,
        content: request.body.content,
        mediaUrl: request.body.mediaUrl === undefined ? undefined : httpUrl(request.body.mediaUrl, 'mediaUrl'),
        payload: group === undefined ? payload : { ...payload, group },
      });
      return reply.status(202).send({ success: true as const, data: { networkMessageId } });
    },
  );
}

/** The network: group chats, and connections dropped and restored. */
function networkRoutes(app: RouteApp, { world, ownDevice }: SandboxDeps): void {
  app.post(
    '/sandbox/groups',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['sandbox'], operationId: 'sandboxCreateGroup', description: 'Creates a WhatsApp group chat on the sandbox network with the number of the device (first, as admin) and these members; the device hears of it as of a real group.',
        summary: "Create a WhatsApp group chat the device's number is in; messages into it reach every member",
        body: Type.Object(
          {
            deviceId: IdString(),
            name: Type.String({ minLength: 1, maxLength: 100 }),
            members: Type.Array(Phone, { minItems: 1, maxItems: 256, description: "The other members' numbers" }),
          },
          { additionalProperties: false },
        ),
        response: {
          201: successData(
            Type.Object({
              id: Type.String({ description: 'The group chat id, <digits>@g.us' }),
              deviceId: Type.String(),
              name: Type.String(),
              members: Type.Array(Type.String(), { description: "Every member, the device's own number first" }),
              createdAt: Timestamp,
            }),
          ),
          ...errorResponses('NOT_FOUND', 'CONFLICT'),
        },
      },
    },
    async (request, reply) => {
      const { accountId } = auth(request);
      const { deviceId, name } = request.body;
      await ownDevice(accountId, deviceId);
      const [phone] = await world.phones([deviceId]);
      if (!phone || phone.state === 'unlinked') throw new AppError('CONFLICT', 'The device is not linked to a phone yet: scan its QR code first (POST /sandbox/scan)');
      const members = [...new Set(request.body.members.map((m, index) => validatePhone(m, `members[${index}]`)))];
      const group = await world.createGroup({ accountId, deviceId, ownNumber: phone.phone_number, name: name.trim() || name, members });
      return reply.status(201).send({ success: true as const, data: group });
    },
  );

  app.post(
    '/sandbox/devices/:id/disconnect',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxDisconnect',
        summary: 'Disconnect a device (sandbox)',
        description: 'Play a dropped connection (network; reconnects by itself unless held) or an unlink from the phone (logout).',
        params: IdParams,
        body: Type.Object(
          {
            reason: Type.Union([Type.Literal('network'), Type.Literal('logout')]),
            hold: Type.Optional(
              Type.Boolean({ description: 'network only: the drop lasts until POST /sandbox/devices/:id/restore; reconnect attempts fail meanwhile' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: successData(Type.Object({ deviceId: Type.String(), reason: Type.String() })), ...errorResponses('NOT_FOUND', 'CONFLICT') },
      },
    },
    async (request) => {
      const { accountId } = auth(request);
      await ownDevice(accountId, request.params.id);
      if (request.body.hold && request.body.reason !== 'network') {
        throw new AppError('VALIDATION_ERROR', 'hold is only for a network drop', [{ field: 'hold', message: 'is only for reason network' }]);
      }
      const changed = await world.setPhoneState(request.params.id, request.body.reason === 'logout' ? 'unlinked' : 'dropped', { held: request.body.hold });
      if (!changed) throw new AppError('CONFLICT', 'The device is not linked to a phone');
      return { success: true as const, data: { deviceId: request.params.id, reason: request.body.reason } };
    },
  );

  app.post(
    '/sandbox/devices/:id/restore',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxRestore',
        summary: 'Restore a connection (sandbox)',
        description: 'End a dropped connection (held or not): the phone is reachable again and the device reconnects.',
        params: IdParams,
        response: { 200: successData(Type.Object({ deviceId: Type.String() })), ...errorResponses('NOT_FOUND', 'CONFLICT') },
      },
    },
    async (request) => {
      const { accountId } = auth(request);
      await ownDevice(accountId, request.params.id);
      if (!(await world.restore(request.params.id))) throw new AppError('CONFLICT', 'The device has no dropped connection to end');
      return { success: true as const, data: { deviceId: request.params.id } };
    },
  );
}

/** What the network received from the account's devices: messages, read receipts, presence. */
function receivedRoutes(app: RouteApp, { world }: SandboxDeps): void {
  app.get(
    '/sandbox/messages',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxListMessages',
        summary: 'List what the network received (sandbox)',
        description: 'What the network received from this account, with sendCalls and delivered.',
        querystring: Type.Object({ ...PageQuery, to: Type.Optional(Phone), deviceId: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
        response: { 200: successPage(SandboxMessage), ...errorResponses() },
      },
    },
    async (request) => {
      const { accountId } = auth(request);
      const { page = 1, to, deviceId } = request.query;
      const limit = Math.min(request.query.limit ?? 50, 1000);
      const { total, items } = await world.listMessages(accountId, { to: to ? validatePhone(to, 'to') : undefined, deviceId }, limit, (page - 1) * limit);
      return { success: true as const, data: items, meta: { total, page, limit } };
    },
  );

  app.get(
    '/sandbox/reads',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxListReads',
        summary: 'List the read receipts the network received (sandbox)',
        description:
          'The read receipts the devices of this account sent for messages they received (POST /messages/{id}/read, or POST /chats/{chatId}/read for its unread messages), ' +
          'newest first, one per message: `networkMessageId` is what POST /sandbox/incoming answered when the message was played.',
        querystring: DeviceChatQuery,
        response: { 200: successPage(SandboxRead), ...errorResponses() },
      },
    },
    async (request) => {
      const { page = 1 } = request.query;
      const limit = Math.min(request.query.limit ?? 50, 1000);
      const { total, items } = await world.listReads(auth(request).accountId, deviceChatFilter(request.query), limit, (page - 1) * limit);
      return { success: true as const, data: items, meta: { total, page, limit } };
    },
  );

  app.get(
    '/sandbox/presence',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['sandbox'],
        operationId: 'sandboxListPresence',
        summary: 'List the presence the devices show (sandbox)',
        description: 'The last presence each device of this account showed in each chat (POST /chats/{chatId}/presence: typing, recording or paused), newest first.',
        querystring: DeviceChatQuery,
        response: { 200: successPage(SandboxPresence), ...errorResponses() },
      },
    },
    async (request) => {
      const { page = 1 } = request.query;
      const limit = Math.min(request.query.limit ?? 50, 1000);
      const { total, items } = await world.listPresence(auth(request).accountId, deviceChatFilter(request.query), limit, (page - 1) * limit);
      return { success: true as const, data: items, meta: { total, page, limit } };
    },
  );
}
