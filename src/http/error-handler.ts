/**
 * One error handler for the whole app. Every failure leaves as
 * `{success: false, error: {code, message, details?}, requestId}` with the status from
 * codeToStatus; a 5xx never shows internals (they go to the log with the requestId).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, codeToStatus, type ErrorCode, type ErrorDetails, type FieldError } from '../errors.js';

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
  return error.message ?? 'is invalid';
}

export function validationDetails(error: FastifyError): FieldError[] {
  const seen = new Set<string>();
  const details: FieldError[] = [];
  for (const item of (error.validation ?? []) as AjvError[]) {
    // anyOf/oneOf produce one line per branch plus a summary; keep the first line per field.
    const field = fieldOf(error.validationContext, item);
    if (seen.has(field)) continue;
    seen.add(field);
    details.push({ field, message: messageOf(item) });
  }
  return details;
}

const FASTIFY_CODES: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'VALIDATION_ERROR', message: 'The request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'VALIDATION_ERROR', message: 'The request body is empty; send a JSON object' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: 'The request body is larger than the limit' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported Content-Type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'VALIDATION_ERROR', message: 'Content-Length does not match the body' },
};

export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  code: ErrorCode,
  message: string,
  details?: ErrorDetails,
): FastifyReply {
  return reply.status(codeToStatus(code)).send({
    success: false,
    error: details === undefined ? { code, message } : { code, message, details },
    requestId: request.id,
  });
}

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      if (error.headers) reply.headers(error.headers);
      return sendError(reply, request, error.code, error.message, error.details);
    }
    if (error.validation) {
      const details = validationDetails(error);
      const first = details[0];
      const message = first ? `${first.field} ${first.message}` : 'The request is invalid';
      return sendError(reply, request, 'VALIDATION_ERROR', message, details);
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known?.code === 'VALIDATION_ERROR') {
      return sendError(reply, request, known.code, known.message, [{ field: 'body', message: known.message }]);
    }
    if (known) {
      const message = known.code === 'UNSUPPORTED_MEDIA_TYPE' ? `${known.message}: ${request.headers['content-type'] ?? '(none)'}` : known.message;
      return sendError(reply, request, known.code, message);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code: ErrorCode = status === 404 ? 'NOT_FOUND' : status === 413 ? 'PAYLOAD_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_ERROR';
      return sendError(reply, request, code, error.message);
    }
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, request, 'INTERNAL', `Internal error; quote request id ${request.id} when reporting it`);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(reply, request, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`),
  );
}
