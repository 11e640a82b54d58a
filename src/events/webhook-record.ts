/**
 * The one definition of the webhook endpoint record, as src/devices/device-record.ts is for
 * devices: the routes answer with WebhookSchema, `WebhookEndpoint` (timestamps are Date) is what
 * the service's mapper returns, `WebhookJson` (timestamps are strings) is what the dashboard and
 * the tests import. Imports nothing but typebox and the list of event types, so the dashboard can import
 * its types (type-only) without pulling in server code.
 */
import Type, { type Static } from 'typebox';
import { DateTime, NullableDateTime, type Jsonified } from '../platform/record-schema.js';
import { SUBSCRIBABLE_EVENT_TYPES } from './event-types.js';


/**
 * DISABLED: not active (turned off by hand, or by Waygate after a 410); FAILING: active, and its
 * latest attempt failed; HEALTHY: active, and its latest attempt succeeded; NO_ATTEMPTS: active,
 * never called yet.
 */
export const WebhookHealthStateSchema = Type.Union([Type.Literal('HEALTHY'), Type.Literal('FAILING'), Type.Literal('DISABLED'), Type.Literal('NO_ATTEMPTS')]);

export const WebhookHealthSchema = Type.Object({
  state: WebhookHealthStateSchema,
  consecutiveFailures: Type.Integer({ description: 'Failed attempts since the last successful one (any delivery)' }),
  lastSuccessAt: NullableDateTime,
  lastFailureAt: NullableDateTime,
}, { title: 'WebhookHealth' });

/** A webhook endpoint (never its secrets). The API writes the fields in this order. */
export const WebhookSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  events: Type.Array(Type.String({ enum: [...SUBSCRIBABLE_EVENT_TYPES] }), { description: 'The event types delivered; empty means every type' }),
  active: Type.Boolean({ description: 'Only active endpoints receive events and count against the plan' }),
  disabledReason: Type.Union([Type.String(), Type.Null()], { description: 'Why Waygate turned the endpoint off (it answered 410 Gone); cleared when it is activated again' }),
  health: WebhookHealthSchema,
  createdAt: DateTime,
  updatedAt: DateTime,
}, { title: 'Webhook' });

export type WebhookHealthState = Static<typeof WebhookHealthStateSchema>;
/** An endpoint on the server (timestamps are Date). */
export type WebhookEndpoint = Static<typeof WebhookSchema>;
/** An endpoint as the API shows it (timestamps are ISO strings). */
export type WebhookJson = Jsonified<WebhookEndpoint>;

/** The health state of an endpoint, from what the delivery worker recorded. */
export function healthState(active: boolean, consecutiveFailures: number, lastSuccessAt: Date | null): WebhookHealthState {
  if (!active) return 'DISABLED';
  if (consecutiveFailures > 0) return 'FAILING';
  return lastSuccessAt ? 'HEALTHY' : 'NO_ATTEMPTS';
}
