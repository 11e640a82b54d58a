import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MAX_IDEMPOTENCY_KEY_LENGTH, type IdempotencyService } from '../../messaging/idempotency.js';
import type { BulkJobService, MessageService } from '../../messaging/send-service.js';
import { auth } from '../auth.js';
import { BulkJobSchema, BulkJobStatusSchema, MessageSchema, MessageStatusSchema } from '../../messaging/message-record.js';
import { errorResponses, IdString, IdParams, KindBodyFields, ListingQuery, successData, successListing, type RouteApp } from '../schemas.js';
import { DIRECT_SEND_MAX, MAX_CAPTION_LENGTH, MAX_MEDIA_URL_LENGTH, MAX_TEXT_LENGTH } from '../../messaging/message-limits.js';

/** The records are defined once, in src/messaging/message-record.ts; the query filters take their states. */
const MessageStatus = MessageStatusSchema;
const JobStatus = BulkJobStatusSchema;

const Phone = Type.String({ minLength: 1, maxLength: 40 });

const SendBody = Type.Object(
  {
    type: Type.String({
      description: 'TEXT, IMAGE, VIDEO, DOCUMENT, AUDIO, STICKER, LOCATION, CONTACT, POLL or REACTION (any case)',
      minLength: 1,
      maxLength: 20,
    }),
    content: Type.Optional(
      Type.String({
        maxLength: MAX_TEXT_LENGTH,
        description:
          'Required for TEXT, IMAGE, VIDEO, DOCUMENT. Text for TEXT; caption for IMAGE, VIDEO, DOCUMENT (unless caption is given); the question of a POLL; ' +
          "a LOCATION's comment; empty or absent for AUDIO, STICKER, CONTACT, REACTION",
      }),
    ),
    mediaUrl: Type.Optional(
      Type.String({ maxLength: MAX_MEDIA_URL_LENGTH, description: 'http(s) URL, fetched when sending; required for IMAGE, VIDEO, DOCUMENT, AUDIO, STICKER (WebP, at most 1 MB)' }),
    ),
    ...KindBodyFields,
    recipients: Type.Optional(Type.Array(Phone, { maxItems: 100_000, description: 'Phone numbers in E.164, as digits' })),
    to: Type.Optional(Type.Union([Phone, Type.Array(Phone, { maxItems: 100_000 })], { description: 'Alias of recipients (the /v1 overview form)' })),
    groupIds: Type.Optional(Type.Array(IdString(), { maxItems: 1000, description: 'Contact groups: one message to each member' })),
    chatIds: Type.Optional(
      Type.Array(IdString(), { maxItems: 1000, description: 'WhatsApp group chats (<digits>@g.us, see GET /chats): each is one recipient' }),
    ),
    caption: Type.Optional(Type.String({ maxLength: MAX_CAPTION_LENGTH })),
    scheduledAt: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601 date-time with a timezone; at most 365 days ahead' })),
    deviceId: Type.Optional(IdString()),
  },
  { additionalProperties: false, title: 'SendMessageRequest' },
);

/** The two answers of a send, told apart by `async` (a literal in each): false for a direct send, true for a bulk job. */
const DirectResponse = Type.Object(
  {
    success: Type.Literal(true),
    message: MessageSchema,
    messages: Type.Array(MessageSchema, { description: 'Every recipient, in request order' }),
    async: Type.Literal(false, { description: 'false: a direct send (its messages are in this answer)' }),
  },
  { title: 'DirectSendResult' },
);
const BulkResponse = Type.Object(
  {
    success: Type.Literal(true),
    jobId: Type.String(),
    status: Type.Union([Type.Literal('PROCESSING'), Type.Literal('SCHEDULED')]),
    message: Type.String({ description: 'Names the number of recipients' }),
    totalContacts: Type.Integer(),
    async: Type.Literal(true, { description: 'true: a bulk job; follow it at GET /messages/bulk-jobs/{jobId}' }),
  },
  { title: 'BulkSendResult' },
);

export const messageRoutes: FastifyPluginAsyncTypebox<{ messages: MessageService; bulkJobs: BulkJobService; idempotency: IdempotencyService }> = async (
  app,
  { messages, bulkJobs, idempotency },
) => {
  sendRoute(app, messages, idempotency);
  listRoute(app, messages);
  bulkJobRoutes(app, bulkJobs);
  oneMessageRoutes(app, messages);
};

/** POST /messages/send: a direct send or a bulk job, optionally idempotent. */
function sendRoute(app: RouteApp, messages: MessageService, idempotency: IdempotencyService): void {
  app.post(
    '/messages/send',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['messages'],
        operationId: 'sendMessage',
        summary: 'Send a message',
        description:
          `Send a message, or create a bulk job (more than ${DIRECT_SEND_MAX} recipients, or any groupIds). ` +
          `1–${DIRECT_SEND_MAX} recipients and no groups: a direct send, answered 200 once the network has acknowledged it (202 when scheduled or not yet acknowledged). ` +
          `Otherwise a bulk job, answered 202 with jobId. Optional \`Idempotency-Key\` header (≤ ${MAX_IDEMPOTENCY_KEY_LENGTH} characters, kept 24 h).`,
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({ minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, description: 'Makes a retry safe: a repeat with the same body within 24 h gets the first answer and sends nothing' }),
          ),
        }),
        body: SendBody,
        response: {
          200: DirectResponse,
          202: Type.Union([DirectResponse, BulkResponse]),
          ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'QUOTA_EXCEEDED', 'NO_CONNECTED_DEVICE', 'PAYLOAD_TOO_LARGE'),
        },
      },
    },
    async (request, reply) => {
      const { accountId } = auth(request);
      const key = request.headers['idempotency-key'];
      const run = async () => messages.send(accountId, request.body);
      if (typeof key === 'string') {
        const result = await idempotency.run(accountId, key, request.body, run);
        if (result.replayed) reply.header('Idempotent-Replayed', 'true');
        // `async` is restated from the stored answer's shape (a bulk job's has a jobId), so a replay carries the discriminator whatever was stored.
        const body = result.body as Record<string, unknown>;
        return reply.status(result.statusCode as 200 | 202).send({ ...body, async: 'jobId' in body } as Awaited<ReturnType<typeof run>>['body']);
      }
      const result = await run();
      return reply.status(result.statusCode).send(result.body);
    },
  );
}

/** GET /messages: the account's messages, newest first. */
function listRoute(app: RouteApp, messages: MessageService): void {
  app.get(
    '/messages',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['messages'],
        operationId: 'listMessages',
        summary: 'List messages',
        description: 'List messages (newest first), sent and received.',
        querystring: Type.Object(
          {
            ...ListingQuery,
            status: Type.Optional(MessageStatus),
            jobId: Type.Optional(Type.String({ maxLength: 100 })),
            to: Type.Optional(Type.String({ maxLength: 40, description: 'The other party: recipient, or sender of an incoming message' })),
            deviceId: Type.Optional(Type.String({ maxLength: 100 })),
            direction: Type.Optional(Type.Union([Type.Literal('out'), Type.Literal('in')])),
          },
          { additionalProperties: false },
        ),
        response: { 200: successListing(MessageSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, ...filters } = request.query;
      return { success: true as const, ...(await messages.list(auth(request).accountId, { page, limit, ...filters })) };
    },
  );
}

/** The bulk jobs: listed, read and cancelled. */
function bulkJobRoutes(app: RouteApp, bulkJobs: BulkJobService): void {
  app.get(
    '/messages/bulk-jobs',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['bulk jobs'],
        operationId: 'listBulkJobs',
        summary: 'List bulk jobs',
        description: 'List bulk jobs (newest first).',
        querystring: Type.Object({ ...ListingQuery, status: Type.Optional(JobStatus) }, { additionalProperties: false }),
        response: { 200: successListing(BulkJobSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, cursor, status } = request.query;
      return { success: true as const, ...(await bulkJobs.list(auth(request).accountId, { page, limit, cursor, status })) };
    },
  );

  app.get(
    '/messages/bulk-jobs/:id',
    {
      config: { scope: 'messages:read' },
      schema: { tags: ['bulk jobs'], operationId: 'getBulkJob', summary: 'Read a bulk job', description: 'Read a bulk job with its live counters.', params: IdParams, response: { 200: successData(BulkJobSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => ({ success: true as const, data: await bulkJobs.get(auth(request).accountId, request.params.id) }),
  );

  app.post(
    '/messages/bulk-jobs/:id/cancel',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['bulk jobs'],
        operationId: 'cancelBulkJob',
        summary: 'Cancel a bulk job',
        description: 'Cancel a bulk job: messages not yet handed to the network are cancelled and refunded.',
        params: IdParams,
        response: { 200: successData(BulkJobSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'CONFLICT') },
      },
    },
    async (request) => ({ success: true as const, data: await bulkJobs.cancel(auth(request).accountId, request.params.id) }),
  );
}

/** One message by id: read, edited, deleted for everyone, marked read, cancelled. */
function oneMessageRoutes(app: RouteApp, messages: MessageService): void {
  app.get(
    '/messages/:id',
    {
      config: { scope: 'messages:read' },
      schema: { tags: ['messages'], operationId: 'getMessage', summary: 'Read a message', description: 'One message of the account by id, sent or received, with its status and timestamps.', params: IdParams, response: { 200: successData(MessageSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => ({ success: true as const, data: await messages.get(auth(request).accountId, request.params.id) }),
  );

  app.patch(
    '/messages/:id',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['messages'], operationId: 'updateMessage',
        summary: 'Edit the text (or caption) of a sent message, within 15 minutes of sentAt',
        description:
          'For a TEXT message, or the caption of an IMAGE, VIDEO or DOCUMENT, that the network has taken (SENT, DELIVERED or READ), within 15 minutes of sentAt ' +
          '(the network\'s window); otherwise 409 NOT_EDITABLE. The record shows the new content and editedAt at once, a `message.edited` event is written, ' +
          'and the device hands the edit to the network. Not counted against the plan.',
        params: IdParams,
        body: Type.Object(
          { content: Type.String({ minLength: 1, maxLength: MAX_TEXT_LENGTH, description: `The new text (at most ${MAX_TEXT_LENGTH} characters) or caption (at most ${MAX_CAPTION_LENGTH})` }) },
          { additionalProperties: false },
        ),
        response: { 200: successData(MessageSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'NOT_EDITABLE') },
      },
    },
    async (request) => ({ success: true as const, data: await messages.edit(auth(request).accountId, request.params.id, request.body.content) }),
  );

  app.delete(
    '/messages/:id',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['messages'], operationId: 'deleteMessage',
        summary: 'Delete a sent message for everyone, within 48 hours of sentAt (a SCHEDULED or QUEUED one is cancelled instead)',
        description:
          'A message the network has taken is deleted on the network for everyone, within 48 hours of sentAt; later, or one that is SENDING, FAILED, CANCELLED, ' +
          'incoming or a REACTION: 409 NOT_DELETABLE. A SCHEDULED or QUEUED message is cancelled (and refunded) instead. Sets deletedAt (the content is kept) and ' +
          'writes a `message.deleted` event; deleting it again changes nothing. Not counted against the plan.',
        params: IdParams,
        response: { 200: successData(MessageSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'NOT_DELETABLE') },
      },
    },
    async (request) => ({ success: true as const, data: await messages.deleteForEveryone(auth(request).accountId, request.params.id) }),
  );

  app.post(
    '/messages/:id/read',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['messages'], operationId: 'markMessageRead',
        summary: 'Mark an incoming message read: the read receipt goes to the sender',
        description: 'Sets readAt on the incoming message and sends the read receipt through its device. Marking it again changes nothing; an outgoing message is 409 CONFLICT.',
        params: IdParams,
        response: { 200: successData(MessageSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'CONFLICT') },
      },
    },
    async (request) => ({ success: true as const, data: await messages.markRead(auth(request).accountId, request.params.id) }),
  );

  app.post(
    '/messages/:id/cancel',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['messages'],
        operationId: 'cancelMessage',
        summary: 'Cancel a message',
        description: 'Cancel a SCHEDULED or QUEUED message (refunded).',
        params: IdParams,
        response: { 200: successData(MessageSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'CONFLICT') },
      },
    },
    async (request) => ({ success: true as const, data: await messages.cancel(auth(request).accountId, request.params.id) }),
  );
}
