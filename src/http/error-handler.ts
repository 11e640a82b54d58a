/**
 * One place for every error answer. Every failure leaves as
 * `{success: false, error: {code, message, details?}, requestId}` with the status from
 * codeToStatus; a 5xx never shows internals (they go to the log with the requestId). That holds
 * for route errors (setErrorHandler), for what the router refuses before any route runs (bad
 * %-encoding, an over-long path parameter: Fastify's frameworkErrors) and for what Node's HTTP
 * parser refuses before Fastify sees a request (malformed HTTP, oversize headers, a request that
 * does not arrive in time: the server's clientError handler).
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { AppError, codeToStatus, type ErrorCode, type ErrorDetails, type FieldError } from '../platform/errors.js';
import { BASE_SECURITY_HEADERS, DATA_CSP, type HeaderDecorator } from './security-headers.js';
import { UNSAFE_TEXT } from './validation.js';

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

function fieldOf(context: string | undefined, error: AjvError): string {
  const path = (error.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  const extra =
    (error.params?.missingProperty as string | undefined) ?? (error.params?.additionalProperty as string | undefined);
  const field = [path, extra].filter(Boolean).join('.');
  return field || context || 'body';
}

function messageOf(error: AjvError): string {
  if (error.keyword === 'additionalProperties') return 'is not a known field';
  if (error.keyword === 'required') return 'is required';
  if (error.keyword === 'enum' && Array.isArray(error.params?.allowedValues)) {
    return `must be one of: ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`;
  }
  return error.message ?? 'is invalid';
}

export function validationDetails(error: FastifyError): FieldError[] {
  const errors = (error.validation ?? []) as AjvError[];
  // A choice of literals (TypeBox's Enum and Union of Literals: anyOf of const) fails with one
  // "const" line per branch: together they are the allowed values.
  const allowed = new Map<string, unknown[]>();
  for (const item of errors) {
    if (item.keyword !== 'const') continue;
    const field = fieldOf(error.validationContext, item);
    allowed.set(field, [...(allowed.get(field) ?? []), item.params?.allowedValue]);
  }
  const seen = new Set<string>();
  const details: FieldError[] = [];
  for (const item of errors) {
    // anyOf/oneOf produce one line per branch plus a summary; keep the first line per field.
    const field = fieldOf(error.validationContext, item);
    if (seen.has(field)) continue;
    seen.add(field);
    const choices = allowed.get(field);
    details.push({ field, message: choices && choices.length > 1 ? `must be one of: ${choices.map(String).join(', ')}` : messageOf(item) });
  }
  return details;
}

const FASTIFY_CODES: Record<string, { code: ErrorCode; message: string; field?: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'VALIDATION_ERROR', message: 'The request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'VALIDATION_ERROR', message: 'The request body is empty; send a JSON object' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: 'The request body is larger than the limit' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported Content-Type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'VALIDATION_ERROR', message: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { code: 'VALIDATION_ERROR', message: 'The URL is not valid: a %-encoding in its path is malformed', field: 'url' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'URI_TOO_LONG', message: 'A path segment is too long' },
};

/** The body of an error answer: the documented shape, the one place it is built. */
export function errorBody(requestId: string, code: ErrorCode, message: string, details?: ErrorDetails) {
  return {
    success: false as const,
    error: details === undefined ? { code, message } : { code, message, details },
    requestId,
  };
}

export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  code: ErrorCode,
  message: string,
  details?: ErrorDetails,
): FastifyReply {
  return reply.status(codeToStatus(code)).send(errorBody(request.id, code, message, details));
}

/** Node's parser errors (before any request exists) mapped onto the documented codes. */
function clientErrorOf(error: NodeJS.ErrnoException): { code: ErrorCode; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'HEADERS_TOO_LARGE', message: 'The request headers are larger than the server accepts' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'REQUEST_TIMEOUT', message: 'The request did not arrive in time' };
    default:
      return { code: 'VALIDATION_ERROR', message: 'The request is not valid HTTP' };
  }
}

/** The headers of an answer written straight to the socket. */
const RAW_HEADERS = Object.entries({ ...BASE_SECURITY_HEADERS, 'content-security-policy': DATA_CSP })
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/**
 * The Fastify options that route pre-route and pre-request failures through here: pass them to
 * Fastify(). `newRequestId` names a socket-level answer (no request object exists yet);
 * `decorate` adds the headers that answers outside the hooks would otherwise miss.
 */
export function errorHandlingOptions(
  newRequestId: () => string,
  decorate: HeaderDecorator,
): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler'> {
  return {
    // The router's refusals run outside the route hooks (no onSend): their headers are set here.
    frameworkErrors: (error, request, reply) => {
      decorate(request, reply);
      return respondToError(error as FastifyError, request, reply);
    },
    clientErrorHandler(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket) {
      // A reset connection has nobody left to answer.
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const { code, message } = clientErrorOf(error);
      const requestId = newRequestId();
      // Not the error object: Node attaches the raw request bytes to it, query token included.
      this.log.debug({ code: error.code, requestId }, `client error: ${error.message}`);
      // Write only where no answer has begun (Node's own rule), so a reply is never cut into.
      const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
      if (socket.writable && !answering) {
        const status = codeToStatus(code);
        const body = JSON.stringify(errorBody(requestId, code, message));
        socket.write(
          `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n${RAW_HEADERS}Connection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy(error);
    },
  };
}

/**
 * Said to a request whose body came in another form (form fields, text, none) on a route that
 * reads a JSON object (readsJsonObject): curl's -d sends form fields unless told otherwise.
 */
const JSON_BODY_HINT = 'send a JSON object with Content-Type: application/json';

/** Whether the route's body is a JSON object (not a CSV import, not no body at all). */
const readsJsonObject = (request: FastifyRequest): boolean => (request.routeOptions.schema?.body as { type?: unknown } | undefined)?.type === 'object';

/** Whether the request's Content-Type is the one JSON bodies are parsed from (json-bodies.ts). */
const isJsonType = (request: FastifyRequest): boolean => /^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '');

function respondToError(error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof AppError) {
    if (error.headers) reply.headers(error.headers);
    return sendError(reply, request, error.code, error.message, error.details);
  }
  if (error.validation) {
    // No id holds a control character: such an id names nothing.
    if (error.validationContext === 'params' && (error.validation as AjvError[]).every((item) => item.keyword === UNSAFE_TEXT)) {
      return sendError(reply, request, 'NOT_FOUND', `No such resource: ${request.url.split('?')[0]}`);
    }
    if (error.validationContext === 'body' && readsJsonObject(request) && !isJsonType(request)) {
      const type = request.headers['content-type'];
      const message = type === undefined ? `The request has no Content-Type; ${JSON_BODY_HINT}` : `The body is ${type}; ${JSON_BODY_HINT}`;
      return sendError(reply, request, 'VALIDATION_ERROR', message, [{ field: 'body', message }]);
    }
    const details = validationDetails(error);
    const first = details[0];
    const message = first ? `${first.field} ${first.message}` : 'The request is invalid';
    return sendError(reply, request, 'VALIDATION_ERROR', message, details);
  }
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known?.code === 'VALIDATION_ERROR') {
    return sendError(reply, request, known.code, known.message, [{ field: known.field ?? 'body', message: known.message }]);
  }
  if (known) {
    const message =
      known.code === 'UNSUPPORTED_MEDIA_TYPE'
        ? `${known.message}: ${request.headers['content-type'] ?? '(none)'}${readsJsonObject(request) ? `; ${JSON_BODY_HINT}` : ''}`
        : known.message;
    return sendError(reply, request, known.code, message);
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const code: ErrorCode = status === 404 ? 'NOT_FOUND' : status === 413 ? 'PAYLOAD_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_ERROR';
    return sendError(reply, request, code, error.message);
  }
  request.log.error({ err: error }, 'request failed');
  return sendError(reply, request, 'INTERNAL', `Internal error; quote request id ${request.id} when reporting it`);
}

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(respondToError);

  app.setNotFoundHandler((request, reply) =>
    sendError(reply, request, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`),
  );
}
