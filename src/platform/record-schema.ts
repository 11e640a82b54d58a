/**
 * The pieces every record schema is made of (src/messaging/message-record.ts): how a point in
 * time is written, and what a record becomes as JSON. Imports nothing but typebox, so the
 * dashboard can import record types (type-only) without pulling in server code.
 */
import Type from 'typebox';

/**
 * A point in time: a Date on the server; Fastify writes it with this format as Date.toISOString
 * (ISO 8601 UTC with milliseconds), as waygate_ts does in SQL.
 */
export const DateTime = Type.Unsafe<Date>({ type: 'string', format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
export const NullableDateTime = Type.Union([DateTime, Type.Null()]);

/** A value as JSON.stringify writes it and JSON.parse reads it back: every Date becomes its ISO string. */
export type Jsonified<T> = T extends Date
  ? string
  : T extends readonly (infer E)[]
    ? Jsonified<E>[]
    : T extends object
      ? { [K in keyof T]: Jsonified<T[K]> }
      : T;
