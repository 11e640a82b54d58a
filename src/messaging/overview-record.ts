/**
 * The one definition of the account overview (GET /account/overview): the route answers with
 * OverviewSchema, `Overview` is what OverviewService returns, `OverviewJson` is what the
 * dashboard imports (type-only). Imports nothing but typebox and other record schemas.
 */
import Type, { type Static } from 'typebox';
import { DeviceSchema } from '../devices/device-record.js';
import { WebhookSchema } from '../events/webhook-record.js';
import { DateTime, NullableDateTime, type Jsonified } from '../platform/record-schema.js';

export const OVERVIEW_DAYS = [7, 30, 90] as const;

const Day = Type.String({ format: 'date', description: 'A UTC day, YYYY-MM-DD' });

/** Outcomes reached and messages received: each counted once, on the UTC day the server recorded it. */
export const OutcomeCountsSchema = Type.Object({
  sent: Type.Integer({ description: 'Messages that reached SENT (including those later DELIVERED or READ)' }),
  delivered: Type.Integer({ description: 'Messages that reached DELIVERED (including those later READ)' }),
  read: Type.Integer({ description: 'Messages that reached READ' }),
  failed: Type.Integer({ description: 'Messages that ended FAILED' }),
  incoming: Type.Integer({ description: 'Messages received' }),
});

/** A share from 0 to 1, null when its denominator is 0. */
const rate = (description: string) => Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description });

export const WarmupSchema = Type.Object(
  {
    day: Type.Union([Type.Integer(), Type.Null()], { description: 'The day of the warm-up, from 1; null when only a pause holds bulk traffic' }),
    days: Type.Integer({ description: 'How many days the warm-up lasts (WHATSAPP_WARMUP)' }),
    dailyCap: Type.Union([Type.Integer(), Type.Null()], { description: 'Bulk messages the device may send today' }),
    sentToday: Type.Integer(),
    endsAt: DateTime,
    bulkPausedUntil: NullableDateTime,
  },
  { description: 'A newly linked WhatsApp number sends bulk messages under daily caps; null when no cap or pause applies now' },
);

export const OverviewSchema = Type.Object({
  days: Type.Integer({ enum: [...OVERVIEW_DAYS] }),
  from: Day,
  to: Day,
  totals: OutcomeCountsSchema,
  rates: Type.Object({
    delivery: rate('delivered / sent; null when nothing was sent'),
    read: rate('read / delivered; null when nothing was delivered'),
    failure: rate('failed / (sent + failed); null when nothing ended'),
  }),
  daily: Type.Array(Type.Object({ day: Day, ...OutcomeCountsSchema.properties }), { description: 'Every day from `from` to `to`, oldest first' }),
  failuresByCode: Type.Array(Type.Object({ code: Type.String(), count: Type.Integer() }), { description: 'Most frequent first' }),
  devices: Type.Array(Type.Object({ ...DeviceSchema.properties, totals: OutcomeCountsSchema, warmup: Type.Union([WarmupSchema, Type.Null()]) }), {
    description: 'The devices (not removed), newest first, with their totals over the period',
  }),
  webhooks: Type.Array(WebhookSchema, { description: 'The webhook endpoints with their health, newest first' }),
});

export type OutcomeCounts = Static<typeof OutcomeCountsSchema>;
export type Overview = Static<typeof OverviewSchema>;
export type OverviewJson = Jsonified<Overview>;
