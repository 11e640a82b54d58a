/**
 * JSON request bodies: Fastify's own parser (its prototype- and constructor-poisoning checks
 * included), except that an empty body sent as `Content-Type: application/json` to a route that
 * takes no body is no body at all. Many clients send that header on every request (an HTTP
 * client configured once, a Postman collection, a workflow tool's HTTP node), DELETE and the
 * body-less POSTs (cancel, read, reconnect, rotate-secret) included; Express-based gateways accept
 * them. A route with a body schema still answers an empty body with VALIDATION_ERROR
 * (FST_ERR_CTP_EMPTY_JSON_BODY, error-handler.ts), and a body that is not empty is parsed as
 * before, whatever the route.
 */
import type { FastifyInstance } from 'fastify';

export function installJsonBodies(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined);
      return;
    }
    parse(request, text, done);
  });
}
