/**
 * One access-log line per request, at info, once it is answered: the request (method, redacted
 * url, client address), its status and how long it took, under its request id. Fastify's own
 * request logging writes two lines a request (one when it arrives, one when it is answered); the
 * line on arrival goes out here at debug, for following a request that has not been answered yet
 * (a direct send waiting for the network, an event stream). The level is fixed at start, so a hook
 * whose lines would never be written is not installed.
 */
import type { FastifyInstance } from 'fastify';
import pino from 'pino';

export function installAccessLog(app: FastifyInstance): void {
  const threshold = app.log.level === 'silent' ? Infinity : (pino.levels.values[app.log.level] ?? 0);
  const writes = (level: 'debug' | 'info'): boolean => pino.levels.values[level]! >= threshold;
  if (writes('debug')) {
    app.addHook('onRequest', (request, _reply, done) => {
      request.log.debug({ req: request }, 'incoming request');
      done();
    });
  }
  if (!writes('info')) return;
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({ req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request completed');
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    request.log.info({ req: request }, 'request aborted by the client');
    done();
  });
}
