/**
 * The security headers of every answer, in one onSend hook: JSON, /docs, the dashboard and
 * errors alike. Answers that set their own Content-Security-Policy (the dashboard's pages, the
 * docs) keep it; everything else gets one that allows nothing, since a JSON answer has nothing
 * to load or run. Strict-Transport-Security goes out when the service is reached over TLS (the
 * socket, a trusted proxy's X-Forwarded-Proto, or an https PUBLIC_URL).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const BASE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** For answers that are data, not pages. */
export const DATA_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export const HSTS = 'max-age=31536000; includeSubDomains';

/** @fastify/swagger-ui's own policy (script and style hashes) for /docs, kept out of frames and without forcing https on a plain-http install. */
export function docsCsp(policy: string): string {
  return policy
    .replace(/upgrade-insecure-requests;?/, '')
    .replace(/frame-ancestors [^;]*/, "frame-ancestors 'none'")
    .trim();
}

/** Sets the request id and the security headers an answer has not set itself. */
export type HeaderDecorator = (request: FastifyRequest, reply: FastifyReply) => void;

export function securityHeaders(options: { publicUrl: string }): HeaderDecorator {
  const alwaysTls = options.publicUrl.startsWith('https://');
  return (request, reply) => {
    reply.header('x-request-id', request.id);
    for (const [name, value] of Object.entries(BASE_SECURITY_HEADERS)) if (!reply.hasHeader(name)) reply.header(name, value);
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', DATA_CSP);
    if (alwaysTls || request.protocol === 'https') reply.header('strict-transport-security', HSTS);
  };
}

/** On every answer that passes through Fastify's hooks (frameworkErrors answers get it from the error handler). */
export function installSecurityHeaders(app: FastifyInstance, decorate: HeaderDecorator): void {
  app.addHook('onSend', async (request, reply) => decorate(request, reply));
}
