import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  DELIVERY_STATUSES,
  MAX_URL_LENGTH,
  SUBSCRIBABLE_EVENT_TYPES,
  type DeliveryStatus,
  type WebhookService,
} from '../../events/webhook-service.js';
import { EVENT_TYPES } from '../../events/event-store.js';
import { WEBHOOK_DESCRIPTION_MAX } from '../../platform/text-limits.js';
import { WebhookSchema } from '../../events/webhook-record.js';
import { auth } from '../auth.js';
import { errorResponses, IdString, IdParams, ListingQuery, NullableTimestamp, SuccessOnly, successData, successListing, successPage, Timestamp, type RouteApp } from '../schemas.js';
import { BoundedPageQuery } from './contacts.js';

const SubscribableEventType = Type.String({ enum: [...SUBSCRIBABLE_EVENT_TYPES], title: 'WebhookEventType' });
const DeliveryStatusSchema = Type.Unsafe<DeliveryStatus>({ type: 'string', enum: [...DELIVERY_STATUSES], title: 'WebhookDeliveryStatus' });

const CreatedWebhookSchema = Type.Object({
  ...WebhookSchema.properties,
  secret: Type.String({ description: 'The signing secret (whsec_ + base64): shown here and by GET /webhooks/{id}/secret only' }),
}, { title: 'WebhookWithSecret' });

const SecretSchema = Type.Object({
  secret: Type.String({ description: 'The current signing secret' }),
  previousSecret: Type.Union([Type.String(), Type.Null()], { description: 'The secret before the last rotation: deliveries are signed with it too until previousSecretExpiresAt' }),
  previousSecretExpiresAt: NullableTimestamp,
}, { title: 'WebhookSecret' });

const AttemptSchema = Type.Object({
  attemptedAt: Timestamp,
  statusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status answered; null when there was no answer' }),
  latencyMs: Type.Integer(),
  responseExcerpt: Type.Union([Type.String(), Type.Null()], { description: 'The first 1,000 characters of the answer' }),
  error: Type.Union([Type.String(), Type.Null()]),
}, { title: 'WebhookAttempt' });

const DeliverySchema = Type.Object({
  id: Type.String(),
  eventId: Type.String({ description: 'Also the webhook-id header of every attempt' }),
  eventType: Type.String({ enum: [...EVENT_TYPES], title: 'EventType' }),
  eventSeq: Type.Union([Type.Integer(), Type.Null()], { description: "The event's seq; null for webhook.test events, which stand outside the account's sequence" }),
  status: DeliveryStatusSchema,
  attempts: Type.Integer(),
  nextAttemptAt: NullableTimestamp,
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  deliveredAt: NullableTimestamp,
  lastAttempts: Type.Array(AttemptSchema, { description: 'Up to the 5 newest attempts, newest first' }),
}, { title: 'WebhookDelivery' });

const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: 'http(s); must resolve to public addresses unless ALLOW_PRIVATE_URLS=true' });
const Events = Type.Array(SubscribableEventType, { maxItems: 20, description: 'Event types to deliver; absent or empty: every type' });
const Description = Type.Union([Type.String({ maxLength: WEBHOOK_DESCRIPTION_MAX }), Type.Null()]);
const WebhookInput = {
  url: Url,
  events: Type.Optional(Events),
  description: Type.Optional(Description),
  active: Type.Optional(Type.Boolean({ default: true, description: 'Default true; an active endpoint counts against the plan' })),
};
const DeliveryParams = Type.Object({ id: IdString(), deliveryId: IdString() });
const WEBHOOK_ERRORS = ['FORBIDDEN', 'NOT_FOUND'] as const;

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  collectionRoutes(app, webhooks);
  endpointRoutes(app, webhooks);
  secretAndTestRoutes(app, webhooks);
  deliveryRoutes(app, webhooks);
};

/** Listing endpoints (never their secrets) and adding one. */
function collectionRoutes(app: RouteApp, webhooks: WebhookService): void {
  app.get(
    '/webhooks',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhooks',
        summary: 'List webhook endpoints',
        description: 'List webhook endpoints (newest first; secrets are never listed).',
        querystring: Type.Object(BoundedPageQuery, { additionalProperties: false }),
        response: { 200: successPage(WebhookSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50 } = request.query;
      return { success: true as const, ...(await webhooks.list(auth(request).accountId, { page, limit })) };
    },
  );

  app.post(
    '/webhooks',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'createWebhook',
        summary: 'Add a webhook endpoint',
        description: 'Add a webhook endpoint: the answer carries its signing secret.',
        body: Type.Object(WebhookInput, { additionalProperties: false }),
        response: { 201: successData(CreatedWebhookSchema), ...errorResponses('FORBIDDEN', 'PLAN_LIMIT') },
      },
    },
    async (request, reply) => reply.status(201).send({ success: true as const, data: await webhooks.create(auth(request).accountId, request.body) }),
  );
}

/** Reading, changing and deleting one endpoint. */
function endpointRoutes(app: RouteApp, webhooks: WebhookService): void {
  app.get(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:read' },
      schema: { tags: ['webhooks'], operationId: 'getWebhook', summary: 'Read a webhook endpoint', description: 'Read a webhook endpoint (without its secret).', params: IdParams, response: { 200: successData(WebhookSchema), ...errorResponses(...WEBHOOK_ERRORS) } },
    },
    async (request) => ({ success: true as const, data: await webhooks.get(auth(request).accountId, request.params.id) }),
  );

  app.patch(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'updateWebhook',
        summary: 'Change a webhook endpoint',
        description: 'Change a webhook endpoint (activating one counts it against the plan and clears disabledReason).',
        params: IdParams,
        body: Type.Object(
          { url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Description), active: Type.Optional(Type.Boolean()) },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: successData(WebhookSchema), ...errorResponses(...WEBHOOK_ERRORS, 'PLAN_LIMIT') },
      },
    },
    async (request) => ({ success: true as const, data: await webhooks.update(auth(request).accountId, request.params.id, request.body) }),
  );

  app.delete(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint',
        description: 'Delete a webhook endpoint with its deliveries (the events stay).',
        params: IdParams,
        response: { 200: SuccessOnly, ...errorResponses(...WEBHOOK_ERRORS) },
      },
    },
    async (request) => {
      await webhooks.remove(auth(request).accountId, request.params.id);
      return { success: true as const };
    },
  );
}

/** The signing secret, its rotation, and test events. */
function secretAndTestRoutes(app: RouteApp, webhooks: WebhookService): void {
  app.get(
    '/webhooks/:id/secret',
    {
      // Whoever holds the secret can forge deliveries: a read-only token does not get it.
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'getWebhookSecret',
        summary: 'Read the signing secret',
        description: 'The signing secret, and the previous one while it is still signing after a rotation (needs webhooks:write).',
        params: IdParams,
        response: { 200: successData(SecretSchema), ...errorResponses(...WEBHOOK_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, data: await webhooks.secret(auth(request).accountId, request.params.id) }),
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate the signing secret',
        description: 'Replace the signing secret: the old one keeps signing (alongside the new one) for 24 hours.',
        params: IdParams,
        response: { 200: successData(SecretSchema), ...errorResponses(...WEBHOOK_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, data: await webhooks.rotateSecret(auth(request).accountId, request.params.id) }),
  );

  app.post(
    '/webhooks/:id/test',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'testWebhook',
        summary: 'Send a test event',
        description: 'Send a webhook.test event to this endpoint only (409 when the endpoint is inactive).',
        params: IdParams,
        response: {
          202: successData(
            Type.Object({
              eventId: Type.String(),
              eventSeq: Type.Null({ description: 'Always null: test events go to one endpoint and take no seq, so no endpoint sees a hole in the sequence' }),
              deliveryId: Type.String(),
            }),
          ),
          ...errorResponses(...WEBHOOK_ERRORS, 'CONFLICT'),
        },
      },
    },
    async (request, reply) => reply.status(202).send({ success: true as const, data: await webhooks.test(auth(request).accountId, request.params.id) }),
  );
}

/** The delivery log, and sending deliveries again. */
function deliveryRoutes(app: RouteApp, webhooks: WebhookService): void {
  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookDeliveries',
        summary: 'List deliveries',
        description: 'The delivery log of an endpoint (newest first), with the latest attempts of each delivery.',
        params: IdParams,
        querystring: Type.Object({ ...ListingQuery, status: Type.Optional(DeliveryStatusSchema) }, { additionalProperties: false }),
        response: { 200: successListing(DeliverySchema), ...errorResponses(...WEBHOOK_ERRORS) },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, cursor, status } = request.query;
      return { success: true as const, ...(await webhooks.deliveries(auth(request).accountId, request.params.id, { page, limit, cursor, status })) };
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:deliveryId/retry',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'retryWebhookDelivery',
        summary: 'Retry a delivery',
        description: 'Send a delivery again now (FAILED or SUCCEEDED; its attempts are kept); 409 while it is PENDING.',
        params: DeliveryParams,
        response: { 202: successData(DeliverySchema), ...errorResponses(...WEBHOOK_ERRORS, 'CONFLICT') },
      },
    },
    async (request, reply) =>
      reply.status(202).send({ success: true as const, data: await webhooks.retryDelivery(auth(request).accountId, request.params.id, request.params.deliveryId) }),
  );

  app.post(
    '/webhooks/:id/replay',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'replayWebhookDeliveries',
        summary: 'Replay failed deliveries',
        description: 'Send again, now, every FAILED delivery of this endpoint created at or after `since`.',
        params: IdParams,
        body: Type.Object({ since: Type.String({ format: 'date-time', description: 'ISO 8601 date-time with a timezone' }) }, { additionalProperties: false }),
        response: { 202: successData(Type.Object({ requeued: Type.Integer({ description: 'How many deliveries went back to PENDING' }) })), ...errorResponses(...WEBHOOK_ERRORS) },
      },
    },
    async (request, reply) =>
      reply.status(202).send({ success: true as const, data: await webhooks.replay(auth(request).accountId, request.params.id, new Date(request.body.since)) }),
  );
}
