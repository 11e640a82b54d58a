/**
 * One access-log line per request, at info, once it is answered: the request (method, redacted
 * url, client address), its status and how long it took, under its request id ("request errored",
 * at error, when the response failed). Fastify's own controller writes two lines a request; here the
 * line on arrival is at debug, for following a request that has not been answered yet (a direct
 * send waiting for the network, an event stream). A request whose client went away before the
 * answer gets "request aborted by the client" at info instead (installAbortLog), as no completed
 * line follows it. Fastify's other lines (errors, 404s) are its own.
 */
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

export class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const line = { req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** Fastify's log controller has no call for an aborted request: a hook writes its line. */
export function installAbortLog(app: FastifyInstance): void {
  app.addHook('onRequestAbort', async (request) => {
    request.log.info({ req: request }, 'request aborted by the client');
  });
}
