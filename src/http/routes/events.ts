import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_TYPES, type EventService } from '../../events/event-store.js';
import { auth } from '../auth.js';
import { errorResponses, Timestamp } from '../schemas.js';

const EventTypeSchema = Type.Enum([...EVENT_TYPES], { type: 'string', title: 'EventType' });

const EventSchema = Type.Object({
  id: Type.String(),
  seq: Type.Integer({ description: 'Per account: 1, 2, 3 … with no gaps' }),
  type: EventTypeSchema,
  timestamp: Timestamp,
  data: Type.Object({}, { additionalProperties: true, description: 'The record the event is about, with the API field names' }),
}, { title: 'Event' });

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: EventService }> = async (app, { events }) => {
  app.get(
    '/events',
    {
      config: { scope: 'events:read' },
      schema: {
        tags: ['events'],
        operationId: 'listEvents',
        summary: 'List events',
        description: 'Events after a seq, oldest first (kept EVENT_RETENTION_DAYS, 31 by default): detect a gap in the webhooks you received and backfill it.',
        querystring: Type.Object(
          {
            after: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'Return events with seq greater than this' })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            type: Type.Optional(EventTypeSchema),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            data: Type.Array(EventSchema),
            meta: Type.Object({ after: Type.Integer(), limit: Type.Integer(), lastSeq: Type.Integer({ description: 'The seq of the account’s newest event' }) }),
          }),
          ...errorResponses('FORBIDDEN'),
        },
      },
    },
    async (request) => {
      const { after = 0, limit = 100, type } = request.query;
      const { data, lastSeq } = await events.list(auth(request).accountId, { after, limit, type });
      return { success: true as const, data, meta: { after, limit, lastSeq } };
    },
  );
};
