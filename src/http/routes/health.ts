import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export interface HealthOptions {
  ready: () => Promise<boolean>;
  metrics: () => Promise<{ contentType: string; body: string }>;
}

const Status = Type.Object({ status: Type.String(), checks: Type.Optional(Type.Object({}, { additionalProperties: Type.String() })) });

/** Public operational routes: no token, no tenant data. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthOptions> = async (app, { ready, metrics }) => {
  app.get(
    '/healthz',
    { schema: { tags: ['ops'], operationId: 'getHealth', summary: 'Liveness', description: 'Answers 200 while the process is up; needs no token.', security: [], response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    { schema: { tags: ['ops'], operationId: 'getReadiness', summary: 'Readiness', description: 'Answers 200 when the database answers and every migration is applied, else 503 naming the failed check; needs no token.', security: [], response: { 200: Status, 503: Status } } },
    async (request, reply) => {
      let database = 'ok';
      try {
        if (!(await ready())) database = 'migrations pending';
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed');
        database = 'unreachable';
      }
      return reply.status(database === 'ok' ? 200 : 503).send({ status: database === 'ok' ? 'ready' : 'not ready', checks: { database } });
    },
  );

  app.get(
    '/metrics',
    { schema: { tags: ['ops'], operationId: 'getMetrics', summary: 'Prometheus metrics', description: 'Requests, messages by status, queue depth, webhook attempts and device states in the Prometheus text exposition format; needs no token.', security: [], produces: ['text/plain'], response: { 200: Type.String() } } },
    async (_request, reply) => {
      const { contentType, body } = await metrics();
      return reply.type(contentType).send(body);
    },
  );
};
