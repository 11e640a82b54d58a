import { createHash, timingSafeEqual } from 'node:crypto';
import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AppError } from '../../platform/errors.js';

export interface HealthOptions {
  ready: () => Promise<boolean>;
  metrics: () => Promise<{ contentType: string; body: string }>;
  /** When set, /metrics answers only `Authorization: Bearer <metricsToken>` (METRICS_TOKEN). */
  metricsToken?: string | undefined;
}

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? '';
  const digest = (value: string): Buffer => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(token));
}

const Status = Type.Object({ status: Type.String(), checks: Type.Optional(Type.Object({}, { additionalProperties: Type.String() })) });

/** Public operational routes: no token, no tenant data. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthOptions> = async (app, { ready, metrics, metricsToken }) => {
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
    {
      schema: {
        tags: ['ops'],
        operationId: 'getMetrics',
        description: 'Requests, messages by status, queue depth, webhook attempts and device states in the Prometheus text exposition format.',
        summary: 'Prometheus metrics (text exposition format); with METRICS_TOKEN set, only for `Authorization: Bearer <METRICS_TOKEN>`',
        security: [],
        produces: ['text/plain'],
        response: { 200: Type.String() },
      },
    },
    async (request, reply) => {
      if (metricsToken !== undefined && !bearerMatches(request.headers.authorization, metricsToken)) {
        throw new AppError('UNAUTHORIZED', 'GET /metrics needs the header Authorization: Bearer <METRICS_TOKEN>', undefined, { 'www-authenticate': 'Bearer realm="metrics"' });
      }
      const { contentType, body } = await metrics();
      return reply.type(contentType).send(body);
    },
  );
};
