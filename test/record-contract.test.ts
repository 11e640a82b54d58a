/**
 * The records the API answers with and the ones event payloads carry are built in two places:
 * the mappers in TypeScript (toMessage, toBulkJob, toDevice, serialised by the route's schema)
 * and, for speed, SQL functions in the statement that changes the state (waygate_message_json,
 * waygate_job_json, waygate_device_json in drizzle/repeatable/). For rows covering every field
 * (each set and each null), the SQL function's JSON must equal what the API answers for the same
 * row: a field added to one side only, a column mapped differently, or a timestamp written in
 * another format fails here. The API's field order is the schema's (message-record.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TObject } from 'typebox';
import { appendEventsSql } from '../src/events/event-store.js';
import { runMigrations } from '../src/platform/migrate.js';
import { DeviceSchema } from '../src/devices/device-record.js';
import { DeviceSchema as RouteDeviceSchema } from '../src/http/routes/devices.js';
import { BulkJobSchema, MessageSchema } from '../src/messaging/message-record.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { call, expectOk } from './messaging-helpers.js';

type Json = Record<string, unknown>;

let ctx: TestContext;
let tenant: Tenant;
beforeAll(async () => {
  ctx = await createTestApp();
  tenant = await createTenant(ctx);
});
afterAll(async () => ctx.close());

const suffix = Math.random().toString(36).slice(2, 10);
const id = (prefix: string, n: number): string => `${prefix}_contract_${suffix}_${n}`;

/** Inserts rows given as column → value (NULL where missing) into `table`. */
async function insertRows(table: string, rows: Json[]): Promise<void> {
  for (const row of rows) {
    await ctx.database.query(`INSERT INTO ${table} SELECT * FROM jsonb_populate_record(NULL::${table}, $1::jsonb)`, [JSON.stringify(row)]);
  }
}

/** What the SQL function makes of the row: the text PostgreSQL writes (as webhook bodies embed it), parsed. */
async function sqlJson(fn: string, table: string, rowId: string): Promise<Json> {
  const [row] = await ctx.database.query<{ json: string }>(`SELECT ${fn}(t)::text AS json FROM ${table} t WHERE id = $1`, [rowId]);
  expect(row, `${table} ${rowId}`).toBeDefined();
  return JSON.parse(row!.json) as Json;
}

/** The API's answer for one record, checked to be in the schema's field order. */
async function apiJson(path: string, schema: TObject): Promise<Json> {
  const body = expectOk<{ data: Json }>(await call(ctx, tenant, 'GET', path));
  expect(Object.keys(body.data)).toEqual(Object.keys(schema.properties));
  return body.data;
}

/** Every field of the schema takes a value in some record and, where the schema allows null, null in another. */
function expectCoverage(schema: TObject, records: Json[]): void {
  for (const [field, property] of Object.entries(schema.properties)) {
    expect(records.some((record) => record[field] !== null && record[field] !== undefined), `some sample sets ${field}`).toBe(true);
    const nullable = JSON.stringify(property).includes('"type":"null"');
    if (nullable) expect(records.some((record) => record[field] === null), `some sample leaves ${field} null`).toBe(true);
  }
}

const DEVICE_ID = id('dev', 0);
const JOB_ID = id('job', 0);

const deviceRows = (accountId: string): Json[] => [
  { id: DEVICE_ID, account_id: accountId, name: 'Shop phone', status: 'CONNECTED', phone_number: '6281234567890', proxy_url: 'http://proxy.example.test:3128', created_at: '2024-02-29T23:59:59.999Z', updated_at: '2024-03-01T00:00:00.000Z', connected_at: '2024-03-01T00:00:00.000Z' },
  { id: id('dev', 1), account_id: accountId, name: 'New "one" ☎', status: 'PENDING', qr_code: 'qr', qr_expires_at: '2030-01-01T00:00:00.000Z', created_at: '2025-06-30T10:11:12.013Z', updated_at: '2025-06-30T10:11:12.013Z' },
  { id: id('dev', 2), account_id: accountId, name: 'Back office', status: 'DISCONNECTED', phone_number: '6289876543210', proxy_url: 'socks5h://user:p%40ss@proxy.example.test:1080', last_error: 'Connection Failure: stream errored (code 515)', created_at: '2023-01-01T00:00:00.001Z', updated_at: '2023-01-02T00:00:00.100Z', connected_at: '2023-01-01T00:00:01.000Z', disconnected_at: '2023-01-02T00:00:00.100Z', lease_owner: 'worker-x', lease_expires_at: '2023-01-02T00:00:03.000Z' },
  { id: id('dev', 3), account_id: accountId, name: 'Old', status: 'LOGGED_OUT', phone_number: '6280000000001', last_error: 'logged out on the phone', created_at: '2022-05-05T05:05:05.555Z', updated_at: '2022-06-06T06:06:06.666Z', connected_at: '2022-05-05T05:06:00.000Z', disconnected_at: '2022-06-06T06:06:06.000Z', logged_out_at: '2022-06-06T06:06:06.666Z', removed_at: '2022-07-07T07:07:07.777Z' },
];

const jobRows = (accountId: string): Json[] => {
  const base = { account_id: accountId, device_id: DEVICE_ID, content: 'Hello', recipients: null, group_ids: null, sent_count: 0, failed_count: 0, delivered_count: 0, read_count: 0, cancelled_count: 0 };
  return [
    { ...base, id: JOB_ID, status: 'PROCESSING', type: 'TEXT', total_contacts: 100_000, sent_count: 7, failed_count: 3, delivered_count: 5, read_count: 2, cancelled_count: 1, quota_period_start: '2024-01-01T00:00:00.000Z', created_at: '2024-01-15T08:00:00.123Z', fanned_out_at: '2024-01-15T08:00:01.000Z' },
    { ...base, id: id('job', 1), status: 'COMPLETED', type: 'IMAGE', media_url: 'https://example.test/a.png', total_contacts: 2, sent_count: 2, delivered_count: 2, scheduled_at: '2024-01-16T09:00:00.000Z', created_at: '2024-01-15T08:00:00.000Z', completed_at: '2024-01-16T09:00:05.250Z' },
    { ...base, id: id('job', 2), status: 'CANCELLED', type: 'DOCUMENT', total_contacts: 3, cancelled_count: 3, created_at: '2024-01-15T08:00:00.001Z', completed_at: '2024-01-15T08:01:00.000Z', cancelled_at: '2024-01-15T08:01:00.000Z' },
    { ...base, id: id('job', 3), status: 'SCHEDULED', type: 'VIDEO', group_ids: ['grp_x'], total_contacts: 0, scheduled_at: '2030-12-31T23:59:59.999Z', created_at: '2024-01-15T08:00:00.002Z' },
  ];
};

const messageRows = (accountId: string): Json[] => {
  const base = { account_id: accountId, device_id: DEVICE_ID, priority: 0, attempts: 0, media: null };
  const out = (n: number, row: Json): Json => ({ ...base, id: id('msg', n), direction: 'out', network_message_id: `3EB0CONTRACT${suffix}${n}`, ...row });
  const incoming = (n: number, row: Json): Json => ({ ...base, id: id('msg', n), direction: 'in', status: 'RECEIVED', network_message_id: `INCONTRACT${suffix}${n}`, ...row });
  return [
    // Sent in a job, read: every outgoing timestamp set.
    out(0, { job_id: JOB_ID, priority: 1, peer: '6281111111111', type: 'IMAGE', content: 'Caption with "quotes", \\ and a line\nbreak ✓ 👍', media_url: 'https://example.test/a.png?x=1&y=2', status: 'READ', attempts: 2, quota_period_start: '2024-01-01T00:00:00.000Z', scheduled_at: '2024-01-15T09:00:00.000Z', created_at: '2024-01-15T08:00:00.123Z', queued_at: '2024-01-15T09:00:00.001Z', sent_at: '2024-01-15T09:00:01.010Z', delivered_at: '2024-01-15T09:00:02.200Z', read_at: '2024-02-29T23:59:59.999Z' }),
    // Failed with a code and message.
    out(1, { peer: '6282222222222', type: 'TEXT', content: 'fails', status: 'FAILED', attempts: 5, error_code: 'NETWORK_ERROR', error_message: 'The network refused: "no"', created_at: '2023-12-31T23:59:59.999Z', queued_at: '2024-01-01T00:00:00.000Z', failed_at: '2024-01-01T00:05:00.500Z' }),
    // A code without a message: the message is ''.
    out(2, { peer: '6283333333333', type: 'DOCUMENT', content: '', media_url: 'https://example.test/doc.pdf', status: 'FAILED', attempts: 1, error_code: 'MEDIA_UNAVAILABLE', created_at: '2024-03-01T00:00:00.000Z', failed_at: '2024-03-01T00:00:00.001Z' }),
    // Cancelled, with a stale message but no code: no error.
    out(3, { job_id: JOB_ID, peer: '6284444444444', type: 'TEXT', content: 'cancelled', status: 'CANCELLED', error_message: 'left over', scheduled_at: '2031-01-01T00:00:00.000Z', created_at: '2024-03-02T12:34:56.789Z', cancelled_at: '2024-03-02T12:35:00.000Z' }),
    // Scheduled: only createdAt and scheduledAt.
    out(4, { peer: '6285555555555', type: 'VIDEO', content: 'later', media_url: 'https://example.test/v.mp4', status: 'SCHEDULED', scheduled_at: '2031-01-01T00:00:00.000Z', created_at: '2024-03-03T00:00:00.000Z' }),
    // Received media with everything the network told, from a LID.
    incoming(5, { peer: '6286666666666', peer_lid: '123456789012345@lid', type: 'VIDEO', content: 'look', media: { mimeType: 'video/mp4', fileName: 'clip.mp4', sizeBytes: 1048576, seconds: 12.5 }, created_at: '2024-04-01T10:00:00.000Z', received_at: '2024-04-01T09:59:59.900Z' }),
    // Received media with only a type; received text without a LID.
    incoming(6, { peer: '6287777777777', type: 'DOCUMENT', content: '', media: { mimeType: 'application/pdf' }, created_at: '2024-04-02T10:00:00.000Z', received_at: '2024-04-02T10:00:00.000Z' }),
    incoming(7, { peer: '6288888888888', type: 'TEXT', content: 'hi (edited)', created_at: '2024-04-03T10:00:00.000Z', received_at: '2024-04-03T09:00:00.000Z', read_at: '2024-04-03T09:30:00.000Z', edited_at: '2024-04-03T09:05:00.250Z' }),
    // The added kinds: a location replying with mentions, a contact card, a poll, a reaction, a voice note.
    out(8, { peer: '6288888888888', type: 'LOCATION', content: 'here', payload: { location: { latitude: -6.175392, longitude: 106.827153, name: 'Monas', address: 'Jakarta "Pusat"' } }, reply_to: id('msg', 7), mentions: ['6281111111111', '6282222222222'], status: 'SENT', attempts: 1, created_at: '2024-04-04T10:00:00.000Z', sent_at: '2024-04-04T10:00:00.500Z' }),
    incoming(9, { peer: '6288888888888', type: 'CONTACT', content: '', payload: { contacts: [{ name: 'Ani ☎', phoneNumber: '6281234500000' }, { name: 'Budi', phoneNumber: '6281234500001' }] }, created_at: '2024-04-05T10:00:00.000Z', received_at: '2024-04-05T10:00:00.000Z' }),
    out(10, { peer: '6288888888888', type: 'POLL', content: 'Lunch?', payload: { poll: { options: ['Rice', 'Noodles', 'Soup'], multiple: true, voters: { '6281111111111': ['Rice', 'Soup'], '6282222222222': ['Soup'], '6283333333333': [] } } }, status: 'QUEUED', created_at: '2024-04-06T10:00:00.000Z', queued_at: '2024-04-06T10:00:00.000Z' }),
    incoming(11, { peer: '6288888888888', type: 'REACTION', content: '', payload: { reaction: { messageId: id('msg', 8), emoji: '👍' } }, created_at: '2024-04-07T10:00:00.000Z', received_at: '2024-04-07T10:00:00.000Z' }),
    out(12, { peer: '6288888888888', type: 'AUDIO', content: '', media_url: 'https://example.test/v.ogg', payload: { voice: true }, status: 'SENT', attempts: 1, created_at: '2024-04-08T10:00:00.000Z', sent_at: '2024-04-08T10:00:01.000Z', deleted_at: '2024-04-08T11:00:00.001Z' }),
  ];
};

describe('SQL record functions equal the API', () => {
  let messages: Json[];
  let jobs: Json[];
  let devices: Json[];
  beforeAll(async () => {
    devices = deviceRows(tenant.accountId);
    jobs = jobRows(tenant.accountId);
    messages = messageRows(tenant.accountId);
    await insertRows('devices', devices);
    await insertRows('bulk_jobs', jobs);
    await insertRows('messages', messages);
  });

  it('waygate_message_json equals GET /messages/:id and the listing, for every field set and null', async () => {
    const answers: Json[] = [];
    const listed = expectOk<{ data: Json[] }>(await call(ctx, tenant, 'GET', `/messages?deviceId=${DEVICE_ID}&limit=100`)).data;
    for (const row of messages) {
      const api = await apiJson(`/messages/${String(row.id)}`, MessageSchema);
      expect(await sqlJson('waygate_message_json', 'messages', String(row.id))).toStrictEqual(api);
      expect(listed.find((m) => m.id === row.id)).toStrictEqual(api);
      answers.push(api);
    }
    expectCoverage(MessageSchema, answers);
  });

  it('keeps waygate_message_fields when the repeatable SQL runs again: a running statement may be using it', async () => {
    const typeOid = async (): Promise<number> =>
      (await ctx.database.query<{ oid: number }>(`SELECT 'waygate_message_fields'::regtype::oid::int AS oid`))[0]!.oid;
    const before = await typeOid();
    await runMigrations(ctx.database);
    expect(await typeOid()).toBe(before);
  });

  it("keeps waygate_message_fields's attributes in jsonb's order of keys, so to_jsonb finds them sorted", async () => {
    const rows = await ctx.database.query<{ attributes: string[]; keys: string[] }>(
      `SELECT (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
                WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped) AS attributes,
              (SELECT array_agg(k ORDER BY n) FROM jsonb_object_keys(waygate_message_json(m)) WITH ORDINALITY AS o(k, n)) AS keys
         FROM pg_type t, (SELECT * FROM messages LIMIT 1) AS m
        WHERE t.typname = 'waygate_message_fields' AND t.typnamespace = current_schema()::regnamespace`,
    );
    expect(rows[0]!.attributes).toHaveLength(Object.keys(MessageSchema.properties).length);
    expect(rows[0]!.attributes).toStrictEqual(rows[0]!.keys);
  });

  it('waygate_job_json equals GET /messages/bulk-jobs/:id and the listing', async () => {
    const answers: Json[] = [];
    const listed = expectOk<{ data: Json[] }>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs?limit=100')).data;
    for (const row of jobs) {
      const api = await apiJson(`/messages/bulk-jobs/${String(row.id)}`, BulkJobSchema);
      expect(await sqlJson('waygate_job_json', 'bulk_jobs', String(row.id))).toStrictEqual(api);
      expect(listed.find((j) => j.id === row.id)).toStrictEqual(api);
      answers.push(api);
    }
    expectCoverage(BulkJobSchema, answers);
  });

  it('the devices route answers with the one device record', () => {
    expect(JSON.stringify(RouteDeviceSchema)).toBe(JSON.stringify(DeviceSchema));
  });

  it('waygate_device_json equals GET /devices/:id', async () => {
    const answers: Json[] = [];
    for (const row of devices) {
      const api = await apiJson(`/devices/${String(row.id)}`, DeviceSchema);
      expect(await sqlJson('waygate_device_json', 'devices', String(row.id))).toStrictEqual(api);
      answers.push(api);
    }
    expectCoverage(DeviceSchema, answers);
  });

  it('an event written from waygate_message_json reads back (GET /events) as the API shows the message', async () => {
    const ids = messages.map((row) => String(row.id));
    await ctx.database.query(
      `WITH src AS (SELECT account_id, 'message.status'::text AS type, waygate_message_json(m) AS data FROM messages m WHERE id = ANY($1::text[]) ORDER BY id),
       ${appendEventsSql('src')}
       SELECT count(*) FROM ev_ins WHERE (SELECT count(*) FROM ev_deliveries) >= 0`,
      [ids],
    );
    const events = expectOk<{ data: { data: Json }[] }>(await call(ctx, tenant, 'GET', '/events?limit=1000')).data;
    expect(events).toHaveLength(ids.length);
    for (const event of events) expect(event.data).toStrictEqual(await apiJson(`/messages/${String(event.data.id)}`, MessageSchema));
  });
});
