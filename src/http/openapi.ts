/**
 * The OpenAPI document at /openapi.json, made by @fastify/swagger from the routes' own schemas
 * and finished here, so that linters (redocly, spectral) pass it and generators make clean
 * clients from it:
 *
 * - every schema with a `title` (the record schemas: Message, BulkJob, Contact, Device, …) is
 *   hoisted into `components.schemas` under that name and referenced by `$ref`; two different
 *   shapes with one title are a bug and fail the document;
 * - the `/v1` copies of the routes are left out (documented once, as the second server);
 * - error answers refer to one shared response per status, with their codes, headers and example;
 * - every answer lists the headers it carries (RateLimit-*, X-Request-Id, Idempotent-Replayed);
 * - every JSON body has an example (src/http/openapi-examples.ts);
 * - `webhooks` describes each event type's delivery, with the Standard Webhooks headers.
 *
 * Every operation must have an operationId and a tag: a route without one fails the document.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { Config } from '../config.js';
import { EVENT_PAYLOADS } from '../events/event-payloads.js';
import { EVENT_TYPES } from '../events/event-store.js';
import { ERROR_STATUS, type ErrorCode } from '../platform/errors.js';
import { DIRECT_SEND_MAX } from '../messaging/message-limits.js';
import { exampleFor, NAMED_EXAMPLES, REQUEST_EXAMPLES, RESPONSE_EXAMPLES } from './openapi-examples.js';

type Json = Record<string, unknown>;

const TAGS: { name: string; description: string }[] = [
  { name: 'messages', description: 'Send messages (directly, or as a bulk job), read and cancel them' },
  { name: 'bulk jobs', description: `Sends to more than ${DIRECT_SEND_MAX} recipients or to groups, processed asynchronously` },
  { name: 'media', description: 'Files uploaded from the computer, sent by naming their mediaUrl' },
  { name: 'contacts', description: "The account's address book" },
  { name: 'groups', description: 'Named sets of contacts to send to' },
  { name: 'devices', description: 'Linked numbers: add one, scan its QR code, watch its status' },
  { name: 'webhooks', description: 'Endpoints that receive signed events, their secrets and delivery logs' },
  { name: 'events', description: 'Every event of the account in order (seq), to backfill missed webhooks' },
  { name: 'chats', description: 'Conversations of the devices (people and WhatsApp groups): history, unread counts, read and presence' },
  { name: 'numbers', description: 'Whether numbers have WhatsApp' },
  { name: 'account', description: 'Plan, usage, limits and the overview' },
  { name: 'tokens', description: 'API tokens' },
  { name: 'sandbox', description: 'Test helpers of the simulated network (NETWORK=sandbox only): play the phone and the network' },
  { name: 'ops', description: 'Health, readiness and metrics (no token)' },
];

/** One shared answer per error status: its name in components.responses and what it means. */
const ERROR_RESPONSES: Record<number, { name: string; meaning: string; example: Json }> = {
  400: {
    name: 'BadRequest',
    meaning: 'The request breaks a schema or a rule, or its JSON is malformed; `details` lists `{field, message}` for each problem',
    example: { code: 'VALIDATION_ERROR', message: 'recipients: must not be empty', details: [{ field: 'recipients', message: 'must not be empty' }] },
  },
  401: { name: 'Unauthorized', meaning: 'No token, or an unknown, expired or revoked one', example: { code: 'UNAUTHORIZED', message: 'Missing API token: send it in the x-api-key header' } },
  402: {
    name: 'QuotaExceeded',
    meaning: "The send does not fit the plan's quota; nothing was sent. `details: {limit, used, requested, resetsAt}`",
    example: { code: 'QUOTA_EXCEEDED', message: 'This send needs 12 messages; 3 of 50 are left this period', details: { limit: 50, used: 47, requested: 12, resetsAt: '2026-12-01T00:00:00.000Z' } },
  },
  403: {
    name: 'Forbidden',
    meaning: "FORBIDDEN: the token lacks the route's scope (`details.requiredScope`); PLAN_LIMIT: the plan's device, webhook or upload storage limit is reached",
    example: { code: 'FORBIDDEN', message: 'This token does not have the messages:send scope', details: { requiredScope: 'messages:send' } },
  },
  404: { name: 'NotFound', meaning: "No such resource in this account (another account's ids answer the same)", example: { code: 'NOT_FOUND', message: 'Contact not found' } },
  409: {
    name: 'Conflict',
    meaning:
      'The state of the resource does not allow it (CONFLICT), the phone number is taken (CONTACT_EXISTS), no device is linked (NO_CONNECTED_DEVICE), or the Idempotency-Key was used with another body (IDEMPOTENCY_KEY_REUSED)',
    example: { code: 'NO_CONNECTED_DEVICE', message: 'No device is linked to this account: add one and scan its QR code' },
  },
  413: { name: 'PayloadTooLarge', meaning: 'The body is over the limit (5 MB by default)', example: { code: 'PAYLOAD_TOO_LARGE', message: 'The request body is over 5242880 bytes' } },
  415: { name: 'UnsupportedMediaType', meaning: 'The Content-Type is not one the route reads', example: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported Content-Type: application/xml' } },
  429: {
    name: 'TooManyRequests',
    meaning: 'Over the per-minute request limit; retry after `Retry-After` seconds',
    example: { code: 'RATE_LIMITED', message: 'Too many requests: the limit is 1200 per minute; retry in 12 s', details: { limit: 1200, retryAfterSeconds: 12 } },
  },
  500: { name: 'InternalError', meaning: 'A fault on the server; the requestId finds it in the log', example: { code: 'INTERNAL', message: 'Internal server error' } },
  503: {
    name: 'ServiceUnavailable',
    meaning: 'No worker answered in time, or the network could not be reached; retry later',
    example: { code: 'SERVICE_UNAVAILABLE', message: 'No worker answered for this device in time; try again' },
  },
};

const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

const HEADERS: Record<string, Json> = {
  'RateLimit-Limit': { description: "Requests allowed per minute to this token's account (without a valid token: to this client address)", schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the current minute', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the current minute ends', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } },
  'X-Request-Id': { description: 'The id of this request (also `requestId` in error bodies, and in the server log)', schema: { type: 'string' } },
  'Idempotent-Replayed': { description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key (nothing was sent again)', schema: { type: 'string', enum: ['true'] } },
};

const WEBHOOK_PARAMETERS: Record<string, Json> = {
  'webhook-id': { name: 'webhook-id', in: 'header', required: true, description: 'The event id; the same on every retry: de-duplicate by it', schema: { type: 'string' } },
  'webhook-timestamp': { name: 'webhook-timestamp', in: 'header', required: true, description: 'When this attempt was sent, in seconds since the epoch; refuse ones far from now', schema: { type: 'string', pattern: '^[0-9]+$' } },
  'webhook-signature': {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` keyed by the base64-decoded secret after `whsec_`; during a secret rotation two signatures, space-separated. Any Standard Webhooks library verifies it.',
    schema: { type: 'string' },
  },
};

const ref = (kind: string, name: string): Json => ({ $ref: `#/components/${kind}/${name}` });

/** The swagger options: the document's fixed parts, and the two transforms that finish it. */
export function openApiOptions(config: Config): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Waygate API',
        version: '1.0.0',
        summary: 'Self-hostable WhatsApp messaging gateway',
        description:
          'Send messages from linked numbers, one at a time or as bulk jobs, and receive signed webhooks.\n\n' +
          '**Paths and versions.** Every path of the API also answers under `/v1` (the second server below), identically: ' +
          '`POST /v1/messages/send` is `POST /messages/send`. The document lists each path once; the ops routes ' +
          '(`/healthz`, `/readyz`, `/metrics`) exist only at the root.\n\n' +
          '**Authentication.** Send the token in the `x-api-key` header, or (less safe: it may end up in logs and browser history) ' +
          'as the `token` query parameter, which is answered with a `Warning: 299` header.\n\n' +
          '**Errors** are `{success: false, error: {code, message, details?}, requestId}` with the HTTP status of the code; ' +
          'every answer carries `X-Request-Id` and the `RateLimit-*` headers.\n\n' +
          '**Events** are delivered to your webhook endpoints as described under `webhooks`, signed per Standard Webhooks.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [
        { url: config.publicUrl, description: 'This server (PUBLIC_URL)' },
        { url: `${config.publicUrl}/v1`, description: 'The same API under the /v1 prefix' },
      ],
      tags: TAGS,
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API token (wg_…), created in the dashboard or with POST /tokens' },
          queryToken: { type: 'apiKey', in: 'query', name: 'token', description: 'The same token as a query parameter (less safe; answered with a Warning: 299 header)' },
        },
      },
      security: [{ apiKey: [] }, { queryToken: [] }],
    },
    // OpenAPI 3.1 is JSON Schema: literals stay `const` (generators make literal types of them).
    convertConstToEnum: false,
    // The /v1 server's path is not stripped from the paths (the /v1 routes are left out instead).
    stripBasePath: false,
    transform: ({ schema, url, route }) => {
      // The /v1 copy of each route is the same operation: documented once, through the second server.
      if (url === '/v1' || url.startsWith('/v1/')) return { schema: { ...schema, hide: true }, url };
      const scope = (route.config as { scope?: string } | undefined)?.scope;
      if (!schema || !scope) return { schema, url };
      const description = [schema.description, `Needs the token scope \`${scope}\`.`].filter(Boolean).join('\n\n');
      return { schema: { ...schema, description }, url };
    },
    transformObject: (documentObject) => finishDocument(structuredClone((documentObject as { openapiObject: Json }).openapiObject), config),
  };
}

/** Everything @fastify/swagger does not do itself (see the top of this file). */
function finishDocument(document: Json, config: Config): Json {
  const components = document.components as Json;
  const schemas: Record<string, Json> = {};
  document.paths = hoistNamed(document.paths, schemas);

  document.webhooks = webhooks(schemas);
  for (const [name, schema] of Object.entries(schemas)) {
    const example = NAMED_EXAMPLES[name];
    if (example !== undefined && schema.examples === undefined) schema.examples = [example];
  }
  components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  components.headers = HEADERS;
  components.parameters = WEBHOOK_PARAMETERS;
  const operationIds = new Set<string>();
  const errorStatuses = new Set<number>();
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, Json>>)) {
    for (const [method, operation] of Object.entries(item)) {
      const id = operation.operationId as string | undefined;
      if (!id) throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} has no operationId`);
      if (operationIds.has(id)) throw new Error(`OpenAPI: operationId ${id} is used twice`);
      operationIds.add(id);
      if (!Array.isArray(operation.tags) || operation.tags.length === 0) throw new Error(`OpenAPI: ${id} has no tag`);
      finishOperation(operation, schemas, config, errorStatuses);
    }
  }
  components.responses = errorResponses(errorStatuses);
  return document;
}

/**
 * Replaces each titled schema below `node` by a $ref to components.schemas[title], children
 * first, so a record inside an envelope is referenced as well. A titled schema with its own
 * description beside the record's keeps it next to the $ref.
 */
function hoistNamed(node: unknown, schemas: Record<string, Json>): unknown {
  if (Array.isArray(node)) return node.map((item) => hoistNamed(item, schemas));
  if (node === null || typeof node !== 'object') return node;
  const object = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, hoistNamed(value, schemas)])) as Json;
  const title = object.title;
  if (typeof title !== 'string' || typeof object.$ref === 'string') return object;
  const known = schemas[title];
  if (!known) {
    schemas[title] = object;
    return { $ref: `#/components/schemas/${title}` };
  }
  const { description, ...rest } = object;
  const { description: knownDescription, ...knownRest } = known;
  const difference = firstDifference(rest, knownRest, title);
  if (difference) throw new Error(`OpenAPI: two different schemas are titled ${title} (they differ at ${difference}); a record has one shape`);
  return description !== undefined && description !== knownDescription ? { $ref: `#/components/schemas/${title}`, description } : { $ref: `#/components/schemas/${title}` };
}

/** Where two JSON values first differ (a path), or undefined when they are equal. */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return `${path}: ${JSON.stringify(a)} / ${JSON.stringify(b)}`;
  }
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const difference = firstDifference((a as Json)[key], (b as Json)[key], `${path}.${key}`);
    if (difference) return difference;
  }
  return undefined;
}

/** The shared error response of each status answered: the hand-written meaning, or the HTTP reason phrase. */
function errorResponses(statuses: Set<number>): Json {
  const codesByStatus = new Map<number, ErrorCode[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS) as [ErrorCode, number][]) codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), code]);
  return Object.fromEntries(
    [...codesByStatus].filter(([status]) => statuses.has(status)).map(([status, codes]) => {
      const { name, meaning, example: error } = errorResponseOf(status, codes);
      const headers: Json = { 'X-Request-Id': ref('headers', 'X-Request-Id') };
      if (status < 500) for (const header of RATE_LIMIT_HEADERS) headers[header] = ref('headers', header);
      if (status === 429) headers['Retry-After'] = ref('headers', 'Retry-After');
      const example = { success: false, error, requestId: 'req_Xk2pQ9aZ1' };
      return [
        name,
        {
          description: `${meaning}. Codes: ${codes.map((code) => `\`${code}\``).join(', ')}.`,
          headers,
          content: { 'application/json': { schema: ref('schemas', 'Error'), example } },
        },
      ];
    }),
  );
}

function errorResponseOf(status: number, codes: ErrorCode[]): { name: string; meaning: string; example: Json } {
  const known = ERROR_RESPONSES[status];
  if (known) return known;
  const reason = STATUS_CODES[status] ?? `HTTP ${status}`;
  return { name: reason.replace(/[^A-Za-z]+(.)?/g, (_, next: string | undefined) => (next ?? '').toUpperCase()), meaning: reason, example: { code: codes[0], message: reason } };
}

const SUCCESS_DESCRIPTIONS: Record<string, string> = { '200': 'OK', '201': 'Created', '202': 'Accepted' };
/** Answers that say more than their status, by `operationId status`. */
const RESPONSE_DESCRIPTIONS: Record<string, string> = {
  'sendMessage 200': 'A direct send (async: false), every message acknowledged or refused by the network',
  'sendMessage 202': 'A direct send that is scheduled or not acknowledged yet (async: false), or a bulk job (async: true)',
  'getReadiness 503': 'Not ready: `checks` names what failed',
};

function finishOperation(operation: Json, schemas: Record<string, Json>, config: Config, errorStatuses: Set<number>): void {
  const id = operation.operationId as string;
  const isOps = (operation.tags as string[]).includes('ops');
  // The ops routes are not under /v1.
  if (isOps) operation.servers = [{ url: config.publicUrl }];
  const body = (operation.requestBody as { content?: Record<string, Json> } | undefined)?.content;
  // A file body taken as a form too: the form's one file part.
  const form = body?.['multipart/form-data'];
  if (form && (form.schema as Json | undefined)?.format === 'binary') {
    form.schema = { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary', description: 'The file (any field name; one file part)' } } };
  }
  for (const [mediaType, media] of Object.entries(body ?? {})) {
    if (!mediaType.includes('json') || media.example !== undefined || media.examples !== undefined) continue;
    const examples = REQUEST_EXAMPLES[id];
    if (examples && examples.length > 1) media.examples = Object.fromEntries(examples.map(({ name, summary, value }) => [name, { summary, value }]));
    else media.example = examples?.[0]?.value ?? exampleFor(media.schema, schemas);
  }
  const responses = operation.responses as Record<string, Json>;
  for (const [status, response] of Object.entries(responses)) {
    const code = Number(status);
    const content = response.content as Record<string, Json> | undefined;
    const schema = content?.['application/json']?.schema as Json | undefined;
    if (code >= 400 && schema?.$ref === '#/components/schemas/Error') {
      const codes = (Object.entries(ERROR_STATUS) as [ErrorCode, number][]).filter(([, value]) => value === code).map(([name]) => name);
      if (codes.length === 0) throw new Error(`OpenAPI: ${id} answers ${code}, which no error code has`);
      responses[status] = ref('responses', errorResponseOf(code, codes).name);
      errorStatuses.add(code);
      continue;
    }
    response.description = RESPONSE_DESCRIPTIONS[`${id} ${status}`] ?? (response.description === 'Default Response' ? SUCCESS_DESCRIPTIONS[status] : response.description);
    if (!response.description) throw new Error(`OpenAPI: ${id} ${status} has no description`);
    const headers: Json = { 'X-Request-Id': ref('headers', 'X-Request-Id') };
    if (!isOps) for (const header of RATE_LIMIT_HEADERS) headers[header] = ref('headers', header);
    if (id === 'sendMessage') headers['Idempotent-Replayed'] = ref('headers', 'Idempotent-Replayed');
    response.headers = headers;
    for (const [mediaType, media] of Object.entries(content ?? {})) {
      if (mediaType !== 'application/json' || media.example !== undefined || media.examples !== undefined) continue;
      const examples = RESPONSE_EXAMPLES[`${id} ${status}`];
      if (examples) media.examples = Object.fromEntries(examples.map(({ name, summary, value }) => [name, { summary, value }]));
      else media.example = exampleFor(media.schema, schemas);
    }
  }
}

/** The OpenAPI 3.1 `webhooks`: one delivery per event type, its body and the Standard Webhooks headers. */
function webhooks(schemas: Record<string, Json>): Json {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => {
      const { summary, data } = EVENT_PAYLOADS[type];
      const name = `${type.split(/[._]/).map((part) => part[0]!.toUpperCase() + part.slice(1)).join('')}Event`;
      schemas[name] = {
        type: 'object',
        description: `The body of a ${type} delivery`,
        required: ['type', 'timestamp', 'seq', 'data'],
        properties: {
          type: { type: 'string', const: type },
          timestamp: { type: 'string', format: 'date-time', description: 'When the event happened (ISO 8601 UTC with milliseconds)' },
          seq:
            type === 'webhook.test'
              ? { type: 'null', description: 'Test events take no seq' }
              : { type: 'integer', description: "The event's place in the account's sequence (1, 2, 3 … with no gaps); GET /events?after= backfills a gap" },
          data: hoistNamed(JSON.parse(JSON.stringify(data)), schemas),
        },
      };
      return [
        type,
        {
          post: {
            operationId: `on${name}`,
            tags: ['webhooks'],
            summary: type,
            description: `${summary}. Answer 2xx within 15 s to acknowledge; anything else is retried (WEBHOOK_RETRY_SCHEDULE, honouring Retry-After); 410 Gone turns the endpoint off.`,
            security: [],
            parameters: Object.keys(WEBHOOK_PARAMETERS).map((header) => ref('parameters', header)),
            requestBody: { required: true, content: { 'application/json': { schema: ref('schemas', name), example: exampleFor(ref('schemas', name), schemas) } } },
            responses: {
              '2XX': { description: 'Acknowledged: the delivery is done' },
              '410': { description: 'Gone: Waygate turns the endpoint off (disabledReason says so)' },
            },
          },
        },
      ];
    }),
  );
}
