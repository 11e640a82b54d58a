/** Shared JSON schemas (TypeBox): one source for validation, serialisation and OpenAPI. */
import Type, { type TSchema } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ERROR_STATUS, type ErrorCode } from '../platform/errors.js';
import { DateTime } from '../platform/record-schema.js';
import { ContactCardSchema, LocationSchema } from '../messaging/message-record.js';
import { MAX_CONTACTS, MAX_EMOJI_LENGTH, MAX_MENTIONS, MAX_POLL_QUESTION, POLL_OPTIONS } from '../messaging/message-limits.js';

/** Handlers return Date objects (or the ISO string); the serialiser writes them as ISO 8601 UTC with milliseconds. */
export const Timestamp = Type.Unsafe<Date | string>(DateTime);
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/**
 * An id a client names (a message, a device, a contact, a group, a chat, a delivery): 1–100
 * characters, more than any id Waygate makes or the network gives a chat.
 */
const MAX_ID_LENGTH = 100;
export const IdString = (options: { description?: string } = {}) => Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, ...options });

export const IdParams = Type.Object({ id: IdString() });

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, default: 1, description: 'Page number, from 1' })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, default: 50, description: 'Items per page; values above 100 are clamped to 100' }),
  ),
};

export const PageMeta = Type.Object(
  {
    total: Type.Integer(),
    page: Type.Integer(),
    limit: Type.Integer(),
  },
  { title: 'PageMeta' },
);

/** Listings of tables without bound (src/platform/listing.ts): `page` or, to walk deep, `cursor`. */
export const ListingQuery = {
  ...PageQuery,
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'meta.nextCursor of an earlier answer: the page after it, at the same cost at any depth (then `page` is ignored; meta.page counts on)',
    }),
  ),
};

export const ListingMeta = Type.Object({
  total: Type.Integer({
    description: 'Rows matching, counted up to a cap (LISTING_COUNT_CAP, default 10,000); a filter without an index of its own counts among the newest LISTING_SCAN_CAP rows. See totalExact',
  }),
  totalExact: Type.Boolean({ description: 'false when counting stopped at a cap: then there are at least `total` rows' }),
  page: Type.Integer(),
  limit: Type.Integer(),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description:
      'Pass as `cursor` for the next page; null on the last page. With a filter that reads at most LISTING_SCAN_CAP rows a page, a page may hold fewer than `limit` rows (even none) and still have a next one',
  }),
}, { title: 'ListingMeta' });

export const FieldErrorSchema = Type.Object({ field: Type.String(), message: Type.String() }, { title: 'FieldError' });

export const ErrorResponse = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String({ enum: Object.keys(ERROR_STATUS) }),
      message: Type.String(),
      details: Type.Optional(Type.Union([Type.Array(FieldErrorSchema), Type.Object({}, { additionalProperties: true })])),
    }),
    requestId: Type.String(),
  },
  { title: 'Error', description: 'Error' },
);

/** The error responses a route can give, keyed by HTTP status, for OpenAPI. */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const statuses = new Set<number>([400, 401, 429, 500, ...codes.map((code) => ERROR_STATUS[code])]);
  return Object.fromEntries([...statuses].map((status) => [status, ErrorResponse]));
}

export const successData = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });

export const successPage = <T extends TSchema>(item: T) =>
  Type.Object({ success: Type.Literal(true), data: Type.Array(item), meta: PageMeta });

export const successListing = <T extends TSchema>(item: T) =>
  Type.Object({ success: Type.Literal(true), data: Type.Array(item), meta: ListingMeta });

export const SuccessOnly = Type.Object({ success: Type.Literal(true) });

/**
 * The body fields of the added kinds of message (DESIGN.md §9), the same on POST /messages/send
 * and POST /sandbox/incoming; src/messaging/message-kinds.ts holds their rules (which type takes
 * which field, uniqueness, phone numbers).
 */
export const KindBodyFields = {
  voice: Type.Optional(Type.Boolean({ description: 'AUDIO: a voice note (push-to-talk)' })),
  location: Type.Optional(
    Type.Object(LocationSchema.properties, { additionalProperties: false, description: 'LOCATION: the place (`content` is an optional comment)' }),
  ),
  contacts: Type.Optional(
    Type.Array(Type.Object(ContactCardSchema.properties, { additionalProperties: false }), {
      minItems: 1,
      maxItems: MAX_CONTACTS,
      description: `CONTACT: 1–${MAX_CONTACTS} cards; the server builds the vCards`,
    }),
  ),
  poll: Type.Optional(
    Type.Object(
      {
        options: Type.Array(Type.String({ minLength: 1, maxLength: POLL_OPTIONS.maxLength }), { minItems: POLL_OPTIONS.min, maxItems: POLL_OPTIONS.max, description: 'Unique' }),
        multiple: Type.Optional(Type.Boolean({ description: 'Voters may pick more than one option (default false)' })),
      },
      { additionalProperties: false, description: `POLL: the options (\`content\` is the question, at most ${MAX_POLL_QUESTION} characters)` },
    ),
  ),
  reaction: Type.Optional(
    Type.Object(
      { messageId: IdString(), emoji: Type.String({ maxLength: MAX_EMOJI_LENGTH, description: '"" removes the reaction' }) },
      { additionalProperties: false, description: 'REACTION: the emoji on a message of the account in the same chat' },
    ),
  ),
  replyTo: Type.Optional(IdString({ description: "Any type but REACTION: the id of a message of the account in the same chat, quoted (a group member's message is in the group chat: send to it with chatIds)" })),
  mentions: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { maxItems: MAX_MENTIONS, description: 'Any type but REACTION: phone numbers mentioned' })),
};

/** The app a route module registers its routes on (TypeBox's type provider), for the functions it splits them into. */
export type RouteApp = Parameters<FastifyPluginAsyncTypebox>[0];
