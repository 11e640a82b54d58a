/**
 * The typed Waygate client: openapi-fetch over the types openapi-typescript generates from the
 * OpenAPI document (schema.d.ts, `npm run client:generate`), plus what every caller needs:
 *
 * - the token in `x-api-key` on every request;
 * - a 429 answer retried after its `Retry-After` (at most `maxRetries` times), the same request
 *   again, so nothing is sent twice;
 * - an `Idempotency-Key` on every POST /messages/send that has none, so a retry (this client's, or
 *   the caller's after a lost answer, with the same key) never sends a message twice;
 * - webhook verification (webhooks.ts).
 *
 *   const waygate = createWaygateClient({ baseUrl: 'http://localhost:3000', apiKey: process.env.WAYGATE_TOKEN! });
 *   const { data, error } = await waygate.POST('/messages/send', { body: { type: 'TEXT', content: 'Hi', recipients: ['6281234567890'] } });
 *   if (data?.async) console.log('bulk job', data.jobId); else if (data) console.log(data.message.status);
 */
import { randomUUID } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './schema.js';

export type * from './schema.js';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type VerifyWebhookOptions } from './webhooks.js';

export type WaygateClient = Client<paths>;

export interface WaygateClientOptions {
  /** Where Waygate answers, e.g. http://localhost:3000 (or …/v1: the same API). */
  baseUrl: string;
  /** An API token (wg_…). */
  apiKey: string;
  /** How many times a 429 is retried (default 3). */
  maxRetries?: number;
  /** The longest wait before a retry, whatever Retry-After says (default 60 s). */
  maxRetryDelayMs?: number;
  /** The fetch to call (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

const SEND_PATH = /\/messages\/send$/;

/** A client for every path of the API, typed by the document. */
export function createWaygateClient(options: WaygateClientOptions): WaygateClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { 'x-api-key': options.apiKey },
    fetch: retryingFetch(options.fetch ?? ((request) => globalThis.fetch(request)), options.maxRetries ?? 3, options.maxRetryDelayMs ?? 60_000),
  });
  client.use(idempotencyKeys);
  return client;
}

/** Adds an Idempotency-Key to each send that has none: a retry of that request is then never a second send. */
const idempotencyKeys: Middleware = {
  onRequest({ request }) {
    if (request.method === 'POST' && SEND_PATH.test(new URL(request.url).pathname) && !request.headers.has('idempotency-key')) {
      request.headers.set('idempotency-key', randomUUID());
    }
    return request;
  },
};

/** Calls `base`, and again after Retry-After while the answer is 429 and retries are left. */
export function retryingFetch(base: (request: Request) => Promise<Response>, maxRetries: number, maxDelayMs: number): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const response = await base(request.clone());
      if (response.status !== 429 || attempt >= maxRetries) return response;
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterMs(response.headers.get('retry-after'), attempt), maxDelayMs)));
    }
  };
}

/** Retry-After in ms (seconds, or an HTTP date); without one, 1 s doubling with each attempt. */
export function retryAfterMs(value: string | null, attempt: number, now: number = Date.now()): number {
  if (value !== null && /^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = value === null ? Number.NaN : Date.parse(value);
  if (!Number.isNaN(date)) return Math.max(0, date - now);
  return 1000 * 2 ** attempt;
}
