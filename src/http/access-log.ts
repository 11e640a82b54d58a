/**
 * One access-log line per request, at info, once it is answered: the request (method, redacted
 * url, client address), its status and how long it took, under its request id. Fastify's own
 * request logging writes two lines a request (one when it arrives, one when it is answered); the
 * line on arrival goes out here at debug, for following a request that has not been answered yet
 * (a direct send waiting for the network, an event stream).
 */
import type { FastifyInstance } from 'fastify';

export function installAccessLog(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    request.log.debug({ req: request }, 'incoming request');
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request completed');
  });
  app.addHook('onRequestAbort', async (request) => {
    request.log.info({ req: request }, 'request aborted by the client');
  });
}
