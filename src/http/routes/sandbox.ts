import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../platform/database.js';
import { normalizePhone } from '../../platform/phone.js';
import type { SandboxPayload, SandboxWorld } from '../../network/sandbox/world.js';
import { MessageTypeSchema } from '../../messaging/message-record.js';
import { checkKind, referenceProblem, type KindInput } from '../../messaging/message-kinds.js';
import { getReferenced } from '../../messaging/message-store.js';
import type { MessageType } from '../../network/network.js';
import type { FieldError } from '../../platform/errors.js';
import { DeviceStore } from '../../devices/device-store.js';
import { AppError, validationError } from '../../platform/errors.js';
import { checkUrlShape, UnsafeUrlError } from '../../outbound/ssrf.js';
import { auth } from '../auth.js';
import { errorResponses, IdParams, KindBodyFields, NullableTimestamp, PageQuery, successData, successPage, Timestamp } from '../schemas.js';

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

const SandboxMessage = Type.Object({
  networkMessageId: Type.String(),
  deviceId: Type.String(),
  to: Type.String(),
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

function digits(value: string, field: string): string {
  const phone = normalizePhone(value);
  if (!phone.ok) throw new AppError('VALIDATION_ERROR', `${field} ${phone.message}`, [{ field, message: phone.message }]);
  return phone.digits;
}

/** Test helpers that play the phone and the network. Only with NETWORK=sandbox; they touch only the caller's account. */
export const sandboxRoutes: FastifyPluginAsyncTypebox<{ world: SandboxWorld; database: Database }> = async (app, { world, database }) => {
  const devices = new DeviceStore(database);

  /** A vote on a poll the device sent to `from`: a choice among its options (one, unless the poll takes several). */
  const votePayload = async (
    accountId: string,
    deviceId: string,
    from: string,
    vote: { messageId: string; options: string[] },
    body: Record<string, unknown>,
  ): Promise<SandboxPayload> => {
    const errors: FieldError[] = [];
    for (const field of ['type', 'mediaUrl', ...Object.keys(KindBodyFields)]) {
      if (body[field] !== undefined) errors.push({ field, message: 'is not used with vote' });
    }
    if (body.content !== '') errors.push({ field: 'content', message: 'must be "" with vote' });
    const poll = await getReferenced(database, accountId, vote.messageId);
    const problem = referenceProblem(poll, [from], deviceId, 'vote.messageId');
    if (problem) errors.push(problem);
    else if (poll!.type !== 'POLL' || !poll!.payload?.poll) errors.push({ field: 'vote.messageId', message: 'is not a POLL' });
    const options = poll?.payload?.poll?.options ?? [];
    vote.options.forEach((option, index) => {
      if (!options.includes(option)) errors.push({ field: `vote.options[${index}]`, message: 'is not an option of the poll' });
      else if (vote.options.indexOf(option) !== index) errors.push({ field: `vote.options[${index}]`, message: 'repeats an earlier option' });
    });
    if (poll?.payload?.poll && !poll.payload.poll.multiple && vote.options.length > 1) errors.push({ field: 'vote.options', message: 'the poll takes one option' });
    if (errors.length > 0) throw new AppError('VALIDATION_ERROR', `${errors[0]!.field} ${errors[0]!.message}`, errors);
    return { vote: { networkMessageId: poll!.network_message_id, options: vote.options } };
  };

  /**
   * The kind fields of a message the phone sends, checked as a send's are; a quote and a reaction
   * point at a message of that chat, which the network knows by its network id.
   */
  const incomingPayload = async (accountId: string, deviceId: string, from: string, type: MessageType, input: KindInput): Promise<SandboxPayload> => {
    const errors: FieldError[] = [];
    const { payload, replyTo, mentions } = checkKind(input, type, errors);
    const { reaction, ...kind } = payload ?? {};
    const result: SandboxPayload = { ...kind, ...(mentions ? { mentions } : {}) };
    const refer = async (id: string, field: string): Promise<string | undefined> => {
      const referenced = await getReferenced(database, accountId, id);
      const problem = referenceProblem(referenced, [from], deviceId, field);
      if (problem) errors.push(problem);
      return referenced?.network_message_id;
    };
    if (replyTo !== null) result.replyTo = await refer(replyTo, 'replyTo');
    if (reaction?.messageId) {
      const target = await refer(reaction.messageId, 'reaction.messageId');
      if (target) result.reaction = { networkMessageId: target, emoji: reaction.emoji };
    }
    if (errors.length > 0) throw new AppError('VALIDATION_ERROR', `${errors[0]!.field} ${errors[0]!.message}`, errors);
    return result;
  };
  const ownDevice = async (accountId: string, deviceId: string): Promise<void> => {
    if (!(await devices.owns(accountId, deviceId))) throw new AppError('NOT_FOUND', 'Device not found');
  };

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
      const phoneNumber = digits(request.body.phoneNumber, 'phoneNumber');
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
        body: Type.Object(
          {
            deviceId: Type.String({ minLength: 1, maxLength: 100 }),
            from: Phone,
            type: Type.Optional(MessageTypeSchema),
            content: Type.String({ maxLength: 4096 }),
            mediaUrl: Type.Optional(Type.String({ maxLength: 2048, description: 'http(s) URL' })),
            ...KindBodyFields,
            vote: Type.Optional(
              Type.Object(
                {
                  messageId: Type.String({ minLength: 1, maxLength: 100 }),
                  options: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 12, description: 'The current choice; [] takes the vote back' }),
                },
                { additionalProperties: false, description: "Play the sender's vote on a POLL the device sent them (then give no type and content \"\")" },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 202: successData(Type.Object({ networkMessageId: Type.String() })), ...errorResponses('NOT_FOUND') },
      },
    },
    async (request, reply) => {
      const { accountId } = auth(request);
      await ownDevice(accountId, request.body.deviceId);
      const from = digits(request.body.from, 'from');
      const type = request.body.type ?? 'TEXT';
      const networkMessageId = await world.addIncoming({
        deviceId: request.body.deviceId,
        from,
        type,
        content: request.body.content,
        mediaUrl: request.body.mediaUrl === undefined ? undefined : httpUrl(request.body.mediaUrl, 'mediaUrl'),
        payload: request.body.vote
          ? await votePayload(accountId, request.body.deviceId, from, request.body.vote, request.body)
          : await incomingPayload(accountId, request.body.deviceId, from, type, request.body),
      });
      return reply.status(202).send({ success: true as const, data: { networkMessageId } });
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
      const { total, items } = await world.listMessages(accountId, { to: to ? digits(to, 'to') : undefined, deviceId }, limit, (page - 1) * limit);
      return { success: true as const, data: items, meta: { total, page, limit } };
    },
  );
};
