/**
 * Examples for the OpenAPI document (src/http/openapi.ts): one typed value per named record
 * (typed with the record's own JSON type, so a changed field fails the type check), the request
 * bodies worth showing more than one way, and a builder that makes every other example from the
 * schema, using the named values for the records inside it. The linters check every example
 * against its schema (redocly no-invalid-media-type-examples, spectral oas3-valid-*-example).
 */
import type { BulkJobJson, MessageJson } from '../messaging/message-record.js';
import type { DeviceJson } from '../devices/device-record.js';

type Json = Record<string, unknown>;

const AT = '2026-11-25T09:30:00.000Z';
const LATER = '2026-11-25T09:30:01.250Z';

const message: MessageJson = {
  id: 'msg_01JDZ3W5Q8R7T2M4N6P8S0V1X3',
  direction: 'out',
  deviceId: 'dev_01JDZ2K7B3C5D7F9G1H3J5K7M9',
  jobId: null,
  to: '6281234567890',
  from: null,
  type: 'TEXT',
  content: 'Your order #1042 is ready for pickup',
  mediaUrl: null,
  media: null,
  status: 'SENT',
  attempts: 1,
  error: null,
  scheduledAt: null,
  createdAt: AT,
  queuedAt: AT,
  sentAt: LATER,
  deliveredAt: null,
  readAt: null,
  failedAt: null,
  cancelledAt: null,
  receivedAt: null,
  fromLid: null,
  location: null,
  contacts: null,
  poll: null,
  reaction: null,
  replyTo: null,
  mentions: null,
  editedAt: null,
  deletedAt: null,
  chatId: '6281234567890',
};

const bulkJob: BulkJobJson = {
  id: 'job_01JDZ4A2B4C6D8E0F2G4H6J8K0',
  status: 'PROCESSING',
  deviceId: 'dev_01JDZ2K7B3C5D7F9G1H3J5K7M9',
  type: 'TEXT',
  totalContacts: 250,
  sentCount: 120,
  failedCount: 2,
  deliveredCount: 97,
  readCount: 40,
  cancelledCount: 0,
  scheduledAt: null,
  createdAt: AT,
  completedAt: null,
  cancelledAt: null,
};

const device: DeviceJson = {
  id: 'dev_01JDZ2K7B3C5D7F9G1H3J5K7M9',
  name: 'Front desk',
  status: 'CONNECTED',
  phoneNumber: '6281398765432',
  lastError: null,
  proxyUrl: null,
  createdAt: AT,
  updatedAt: LATER,
  connectedAt: LATER,
  disconnectedAt: null,
  loggedOutAt: null,
  removedAt: null,
};

const contact = { id: 'ct_01JDZ1Q2W3E4R5T6Y7U8I9O0P1', name: 'Ana Putri', phoneNumber: '6281234567890', createdAt: AT, updatedAt: AT };
const group = { id: 'grp_01JDZ1A3S5D7F9G1H3J5K7L9Z1', name: 'VIP customers', contactsCount: 42, createdAt: AT, updatedAt: AT };
const webhook = {
  id: 'wh_01JDZ5M2N4B6V8C0X2Z4L6K8J0',
  url: 'https://example.com/waygate',
  description: 'CRM',
  events: ['message.status', 'message.received'],
  active: true,
  disabledReason: null,
  health: { state: 'HEALTHY', consecutiveFailures: 0, lastSuccessAt: LATER, lastFailureAt: null },
  createdAt: AT,
  updatedAt: AT,
};

/** Example values of the named schemas, by component name. */
export const NAMED_EXAMPLES: Record<string, unknown> = {
  Message: message,
  BulkJob: bulkJob,
  Device: device,
  Contact: contact,
  GroupMember: { ...contact, addedAt: LATER },
  Group: group,
  Webhook: webhook,
  WebhookWithSecret: { ...webhook, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
  WebhookSecret: { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', previousSecret: null, previousSecretExpiresAt: null },
  QrCode: { code: '2@sandbox-qr-3f9a1c', image: 'data:image/png;base64,iVBORw0KGgo=', expiresAt: LATER },
  Token: {
    id: 'tok_01JDZ6P1O2I3U4Y5T6R7E8W9Q0',
    name: 'CRM integration',
    prefix: 'wg_3kQ9',
    last4: 'x7Za',
    scopes: ['messages:send', 'messages:read'],
    createdAt: AT,
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
  },
  PageMeta: { total: 1, page: 1, limit: 50 },
  ListingMeta: { total: 1, totalExact: true, page: 1, limit: 50, nextCursor: null },
  MessageReactionData: {
    messageId: 'msg_01JDZ3W5Q8R7T2M4N6P8S0V1X3',
    deviceId: 'dev_01JDZ2K7B3C5D7F9G1H3J5K7M9',
    from: '6281234567890',
    fromLid: null,
    emoji: '👍',
    reactionId: 'msg_01JDZ7R3E5W7Q9A1S3D5F7G9H1',
    at: LATER,
  },
  PollVoteData: { messageId: 'msg_01JDZ3W5Q8R7T2M4N6P8S0V1X3', voter: '6281234567890', options: ['Saturday'] },
  WebhookTestData: { endpointId: 'wh_01JDZ5M2N4B6V8C0X2Z4L6K8J0', message: 'This is a test event from Waygate' },
};

interface NamedExample {
  name: string;
  summary: string;
  value: unknown;
}

/** Request bodies shown several ways, by operationId. */
export const REQUEST_EXAMPLES: Record<string, NamedExample[]> = {
  sendMessage: [
    { name: 'text', summary: 'A text to one number (a direct send)', value: { type: 'TEXT', content: 'Your order #1042 is ready for pickup', recipients: ['6281234567890'] } },
    {
      name: 'image',
      summary: 'An image with a caption',
      value: { type: 'IMAGE', content: 'New arrivals', mediaUrl: 'https://example.com/catalogue.jpg', recipients: ['6281234567890'] },
    },
    { name: 'groups', summary: 'To every member of two groups (a bulk job)', value: { type: 'TEXT', content: 'We open at 10 tomorrow', groupIds: ['grp_01JDZ1A3S5D7F9G1H3J5K7L9Z1', 'grp_01JDZ1A3S5D7F9G1H3J5K7L9Z2'] } },
    {
      name: 'scheduled',
      summary: 'A scheduled text',
      value: { type: 'TEXT', content: 'Happy new year!', recipients: ['6281234567890'], scheduledAt: '2026-12-31T17:00:00.000Z' },
    },
    {
      name: 'poll',
      summary: 'A poll',
      value: { type: 'POLL', content: 'Which day suits you?', poll: { options: ['Saturday', 'Sunday'] }, recipients: ['6281234567890'] },
    },
  ],
  createContact: [{ name: 'contact', summary: 'A contact', value: { name: 'Ana Putri', phoneNumber: '+62 812-3456-7890' } }],
  createGroup: [{ name: 'group', summary: 'A group with one member', value: { name: 'VIP customers', contactIds: ['ct_01JDZ1Q2W3E4R5T6Y7U8I9O0P1'] } }],
  addGroupContacts: [{ name: 'members', summary: 'Contacts to add', value: { contactIds: ['ct_01JDZ1Q2W3E4R5T6Y7U8I9O0P1'] } }],
  createDevice: [{ name: 'device', summary: 'A device', value: { name: 'Front desk' } }],
  createWebhook: [
    { name: 'webhook', summary: 'An endpoint for two event types', value: { url: 'https://example.com/waygate', events: ['message.status', 'message.received'], description: 'CRM' } },
  ],
  createToken: [{ name: 'token', summary: 'A token that sends and reads messages', value: { name: 'CRM integration', scopes: ['messages:send', 'messages:read'] } }],
  sandboxScan: [{ name: 'scan', summary: 'The phone scans the QR code', value: { code: '2@sandbox-qr-3f9a1c', phoneNumber: '6281398765432' } }],
  sandboxIncoming: [
    { name: 'incoming', summary: 'A text from a customer', value: { deviceId: 'dev_01JDZ2K7B3C5D7F9G1H3J5K7M9', from: '6281234567890', type: 'TEXT', content: 'Is my order ready?' } },
  ],
  replayWebhookDeliveries: [{ name: 'since', summary: 'Every failed delivery since a time', value: { since: '2026-11-20T00:00:00Z' } }],
};

/** Response bodies shown several ways, by `operationId status`. */
export const RESPONSE_EXAMPLES: Record<string, NamedExample[]> = {
  'sendMessage 202': [
    {
      name: 'direct',
      summary: 'A direct send not acknowledged yet (async: false)',
      value: { success: true, message: { ...message, status: 'QUEUED', sentAt: null }, messages: [{ ...message, status: 'QUEUED', sentAt: null }], async: false },
    },
    {
      name: 'bulk',
      summary: 'A bulk job (async: true)',
      value: { success: true, jobId: bulkJob.id, status: 'PROCESSING', message: `Bulk job ${bulkJob.id} created for 250 recipients`, totalContacts: 250, async: true },
    },
  ],
};

/** An example the schema accepts: the named value for each $ref with one, otherwise built from the keywords. */
export function exampleFor(schema: unknown, schemas: Record<string, Json>, depth = 0): unknown {
  if (schema === null || typeof schema !== 'object' || depth > 20) return null;
  const s = schema as Json;
  if (typeof s.$ref === 'string') {
    const name = s.$ref.split('/').pop()!;
    return name in NAMED_EXAMPLES ? structuredClone(NAMED_EXAMPLES[name]) : exampleFor(schemas[name], schemas, depth + 1);
  }
  if ('const' in s) return s.const;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum)) return s.enum[0];
  const branches = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (branches) return exampleFor(branches.find((branch) => branch.type !== 'null') ?? branches[0], schemas, depth + 1);
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries((s.properties ?? {}) as Record<string, Json>).map(([key, value]) => [key, exampleFor(value, schemas, depth + 1)]));
    case 'array':
      return Array.from({ length: Math.max(1, Number(s.minItems ?? 1)) }, () => exampleFor(s.items, schemas, depth + 1));
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : typeof s.maximum === 'number' && s.maximum < 1 ? s.maximum : 1;
    case 'boolean':
      return true;
    case 'string':
      if (s.format === 'date-time') return AT;
      if (s.format === 'date') return AT.slice(0, 10);
      return 'string'.padEnd(Number(s.minLength ?? 0), 'x');
    default:
      return null;
  }
}
