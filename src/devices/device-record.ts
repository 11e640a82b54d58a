/**
 * The one definition of the device record, as src/messaging/message-record.ts is for messages
 * and bulk jobs: the route answers with DeviceSchema, `Device` (timestamps are Date) is what the
 * service's mapper returns, `DeviceJson` (timestamps are strings) is what the dashboard and the
 * tests import, and waygate_device_json (drizzle/repeatable/10_device_json.sql) is kept equal to
 * the API by test/record-contract.test.ts. Imports nothing but typebox, so the dashboard can
 * import its types (type-only) without pulling in server code.
 */
import Type, { type Static } from 'typebox';
import { DateTime, NullableDateTime, type Jsonified } from '../platform/record-schema.js';

/** PENDING → CONNECTED ⇄ DISCONNECTED → LOGGED_OUT */
export const DeviceStatusSchema = Type.Union([Type.Literal('PENDING'), Type.Literal('CONNECTED'), Type.Literal('DISCONNECTED'), Type.Literal('LOGGED_OUT')], { title: 'DeviceStatus' });

/** A device (a linked number). The API writes the fields in this order. */
export const DeviceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: DeviceStatusSchema,
  phoneNumber: Type.Union([Type.String(), Type.Null()], { description: 'The linked number, once CONNECTED' }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  proxyUrl: Type.Union([Type.String(), Type.Null()], { description: 'The proxy the WhatsApp network connects through, its password shown as ***; null: direct' }),
  createdAt: DateTime,
  updatedAt: DateTime,
  connectedAt: NullableDateTime,
  disconnectedAt: NullableDateTime,
  loggedOutAt: NullableDateTime,
  removedAt: NullableDateTime,
}, { title: 'Device' });

export type DeviceStatus = Static<typeof DeviceStatusSchema>;
/** A device on the server (timestamps are Date). */
export type Device = Static<typeof DeviceSchema>;
/** A device as the API and the webhook events show it (timestamps are ISO strings). */
export type DeviceJson = Jsonified<Device>;
