/**
 * Webhook signing exactly per the Standard Webhooks specification (standardwebhooks.com), so any
 * Standard Webhooks library verifies what Waygate sends:
 *
 * - a secret is `whsec_` + base64 of 32 random bytes; the HMAC key is the decoded bytes;
 * - the signed content is `${webhook-id}.${webhook-timestamp}.${body}` (timestamp in integer
 *   seconds since the epoch, body exactly as sent);
 * - `webhook-signature` is `v1,<base64 HMAC-SHA256>`, several separated by spaces: during a
 *   secret rotation Waygate signs with both the new and the previous secret, and a receiver
 *   holding either one verifies the message.
 *
 * The receiving side (verifyWebhook) is here too, beside the signing it checks; the typed client
 * (client/webhooks.ts) uses it. Imports nothing but node:crypto.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key of a secret: the base64-decoded part after `whsec_` (the prefix is optional, as in the reference libraries). */
function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new Error('A webhook secret must not be empty');
  return key;
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for one secret. */
export function signPayload(secret: string, id: string, timestampSeconds: number, body: string): string {
  if (!Number.isInteger(timestampSeconds)) throw new Error('The webhook timestamp must be an integer number of seconds');
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface WebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  'content-type': 'application/json';
  [name: string]: string;
}

/**
 * The headers of one delivery attempt. `id` is the webhook-id (stable across retries of one
 * delivery); `timestamp` is when this attempt is sent (seconds since the epoch, or a Date, which
 * is truncated to whole seconds); `secrets` are the endpoint's current secret first and, during a
 * rotation, the previous one (duplicates are signed once).
 */
export function webhookHeaders(options: { id: string; timestamp: number | Date; body: string; secrets: readonly string[] }): WebhookHeaders {
  const seconds = options.timestamp instanceof Date ? Math.floor(options.timestamp.getTime() / 1000) : Math.floor(options.timestamp);
  const secrets = [...new Set(options.secrets)];
  if (secrets.length === 0) throw new Error('At least one webhook secret is needed to sign a delivery');
  return {
    'webhook-id': options.id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': secrets.map((secret) => signPayload(secret, options.id, seconds, options.body)).join(' '),
    'content-type': 'application/json',
  };
}

/** Why a delivery was refused: missing headers, a timestamp out of tolerance, or no matching signature. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** Default tolerance between webhook-timestamp and the receiver's clock, as in the reference libraries. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export interface VerifyWebhookOptions {
  /** The endpoint's secret (whsec_…), or several (say, the current and the previous one). */
  secret: string | readonly string[];
  /** The request's headers (names in any case). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The request body exactly as received (not parsed and serialised again). */
  body: string;
  toleranceSeconds?: number;
  now?: Date;
}

function header(headers: VerifyWebhookOptions['headers'], name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
  const value = entry?.[1];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Checks a delivery the Standard Webhooks way: the three headers are there, webhook-timestamp is
 * within the tolerance of now (a replayed capture is refused), and one of the `v1,` signatures in
 * webhook-signature is the HMAC of `id.timestamp.body` under one of the secrets (compared in
 * constant time). Throws WebhookVerificationError otherwise.
 */
export function verifyWebhook(options: VerifyWebhookOptions): void {
  const id = header(options.headers, 'webhook-id');
  const timestamp = header(options.headers, 'webhook-timestamp');
  const signatures = header(options.headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature header');
  const seconds = Number(timestamp);
  if (!/^[0-9]+$/.test(timestamp) || !Number.isSafeInteger(seconds)) throw new WebhookVerificationError('Invalid webhook-timestamp');
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(now - seconds) > tolerance) throw new WebhookVerificationError('webhook-timestamp is too far from now');
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  const given = signatures.split(' ').filter((part) => part.startsWith('v1,')).map((part) => Buffer.from(part));
  for (const secret of secrets) {
    const expected = Buffer.from(signPayload(secret, id, seconds, options.body));
    if (given.some((signature) => signature.length === expected.length && timingSafeEqual(signature, expected))) return;
  }
  throw new WebhookVerificationError('No webhook-signature matches the body under the given secret');
}
