/**
 * Verifying a webhook delivery from Waygate (Standard Webhooks): the signature checks of
 * src/outbound/standard-webhooks.ts, the same module that signs them, and the body typed by the
 * document's `webhooks` section.
 *
 *   const event = verifyWebhook({ secret: process.env.WAYGATE_WEBHOOK_SECRET!, headers: request.headers, body: rawBody });
 *   if (event.type === 'message.status') console.log(event.data.id, event.data.status);
 */
import { verifyWebhook as verifySignature, type VerifyWebhookOptions } from '../src/outbound/standard-webhooks.js';
import type { webhooks } from './schema.js';

export { WebhookVerificationError, type VerifyWebhookOptions } from '../src/outbound/standard-webhooks.js';

type DeliveryBody<T> = T extends { post?: { requestBody: { content: { 'application/json': infer Body } } } } ? Body : never;

/** The body of any delivery; `type` tells which (message.status, message.received, …). */
export type WebhookEvent = { [Type in keyof webhooks]: DeliveryBody<webhooks[Type]> }[keyof webhooks];

/** Checks the signature and the timestamp (throws WebhookVerificationError), then returns the event. */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookEvent {
  verifySignature(options);
  return JSON.parse(options.body) as WebhookEvent;
}
