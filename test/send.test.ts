/**
 * POST /messages/send through the real app and a real worker on the sandbox network: every
 * validation rule, the accepted forms (lowercase type, `to` as a string or an array, /v1 with
 * X-API-Key), merging and de-duplication of recipients, the direct/bulk boundary (10 unique
 * recipients), groups, the choice of device, media failures, and what the sandbox's magic
 * numbers do to a message (0000 not on the network, 0001 never delivered, 0002 never read,
 * 0003 a transient failure first).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import {
  MESSAGING_ENV,
  createMessagingApp,
  addDevice,
  call,
  createContact,
  createGroup,
  expectError,
  expectFieldError,
  expectOk,
  getJob,
  getMessage,
  isoIn,
  linkDevice,
  listMessages,
  phone,
  phones,
  sandboxMessages,
  send,
  sendBulk,
  sendDirect,
  sleep,
  time,
  usedMessages,
  waitForDevice,
  waitForJob,
  waitForMessage,
  waitForStatus,
  type DataBody,
  type DirectSendBody,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

const text = (recipients: string[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({ type: 'TEXT', content: 'hello', recipients, ...extra });

describe('validation', () => {
  // Each case: a body and the fields its 400 must name. Validation comes before anything else,
  // so the tenant needs no device, and nothing is created.
  const cases: { name: string; body: () => Record<string, unknown>; fields: string[] }[] = [
    { name: 'missing type', body: () => ({ content: 'x', recipients: [phone()] }), fields: ['type'] },
    { name: 'unknown type', body: () => ({ type: 'GIF', content: 'x', recipients: [phone()] }), fields: ['type'] },
    { name: 'empty type', body: () => ({ type: '', content: 'x', recipients: [phone()] }), fields: ['type'] },
    { name: 'type not a string', body: () => ({ type: 1, content: 'x', recipients: [phone()] }), fields: ['type'] },
    { name: 'TEXT without content', body: () => ({ type: 'TEXT', recipients: [phone()] }), fields: ['content'] },
    { name: 'TEXT with empty content', body: () => ({ type: 'TEXT', content: '', recipients: [phone()] }), fields: ['content'] },
    { name: 'TEXT with blank content', body: () => ({ type: 'TEXT', content: '  \n ', recipients: [phone()] }), fields: ['content'] },
    { name: 'TEXT over 4096 characters', body: () => ({ type: 'TEXT', content: 'x'.repeat(4097), recipients: [phone()] }), fields: ['content'] },
    { name: 'TEXT with a caption', body: () => ({ type: 'TEXT', content: 'x', caption: 'c', recipients: [phone()] }), fields: ['caption'] },
    { name: 'IMAGE without mediaUrl', body: () => ({ type: 'IMAGE', content: 'cap', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'VIDEO without mediaUrl', body: () => ({ type: 'VIDEO', content: '', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'DOCUMENT without mediaUrl', body: () => ({ type: 'document', content: '', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'mediaUrl with TEXT', body: () => ({ type: 'TEXT', content: 'x', mediaUrl: 'https://example.com/a.png', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'mediaUrl with ftp:', body: () => ({ type: 'IMAGE', content: '', mediaUrl: 'ftp://example.com/a.png', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'mediaUrl not a URL', body: () => ({ type: 'IMAGE', content: '', mediaUrl: 'not a url', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'mediaUrl javascript:', body: () => ({ type: 'DOCUMENT', content: '', mediaUrl: 'javascript:alert(1)', recipients: [phone()] }), fields: ['mediaUrl'] },
    { name: 'bad phone in recipients[1]', body: () => text([phone(), '12ab', phone()]), fields: ['recipients[1]'] },
    { name: 'too short phone in recipients[0]', body: () => text(['12345']), fields: ['recipients[0]'] },
    { name: 'trunk-prefixed phone', body: () => text(['081234567890']), fields: ['recipients[0]'] },
    { name: 'bad phone in `to` (string)', body: () => ({ type: 'TEXT', content: 'x', to: 'call me' }), fields: ['to'] },
    { name: 'bad phone in `to` (array)', body: () => ({ type: 'TEXT', content: 'x', to: [phone(), '999'] }), fields: ['to[1]'] },
    { name: 'recipients not an array', body: () => ({ type: 'TEXT', content: 'x', recipients: phone() }), fields: ['recipients'] },
    { name: 'no recipients and no groupIds', body: () => ({ type: 'TEXT', content: 'x' }), fields: ['recipients'] },
    { name: 'empty recipients and empty groupIds', body: () => ({ type: 'TEXT', content: 'x', recipients: [], groupIds: [] }), fields: ['recipients'] },
    { name: 'empty `to` array', body: () => ({ type: 'TEXT', content: 'x', to: [] }), fields: ['recipients'] },
    { name: 'unknown body field', body: () => ({ ...text([phone()]), priority: 'high' }), fields: ['priority'] },
    { name: 'scheduledAt without timezone', body: () => text([phone()], { scheduledAt: '2030-01-01T09:00:00' }), fields: ['scheduledAt'] },
    { name: 'scheduledAt not a date', body: () => text([phone()], { scheduledAt: 'tomorrow' }), fields: ['scheduledAt'] },
    { name: 'scheduledAt more than 60 s in the past', body: () => text([phone()], { scheduledAt: isoIn(-61_000 - 5_000) }), fields: ['scheduledAt'] },
    { name: 'scheduledAt more than 365 days ahead', body: () => text([phone()], { scheduledAt: isoIn(366 * 24 * 3600 * 1000) }), fields: ['scheduledAt'] },
    {
      name: 'several broken rules at once',
      body: () => ({ type: 'IMAGE', content: '', recipients: ['bad'], scheduledAt: '2030-01-01 09:00' }),
      fields: ['mediaUrl', 'recipients[0]', 'scheduledAt'],
    },
  ];

  for (const testCase of cases) {
    it(`400 VALIDATION_ERROR: ${testCase.name}`, async () => {
      const tenant = await createTenant(ctx);
      const response = await send(ctx, tenant, testCase.body());
      for (const field of testCase.fields) expectFieldError(response, field);
      expect(expectError(response, 400, 'VALIDATION_ERROR').error.message).toContain(testCase.fields[0]!);
      expect((await listMessages(ctx, tenant)).meta.total).toBe(0);
    });
  }

  it('malformed JSON is a 400 naming the body', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'POST', url: '/messages/send', headers: { ...tenant.headers, 'content-type': 'application/json' }, payload: '{"type":' });
    expectFieldError(response, 'body');
  });

  it('scheduledAt a little (≤ 60 s) in the past is accepted and sent now', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const sent = await sendDirect(ctx, tenant, text([phone()], { scheduledAt: isoIn(-30_000) }));
    expect(['SENT', 'DELIVERED', 'READ']).toContain(sent.message.status);
  });

  it('scheduledAt with an offset instead of Z is accepted', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const at = new Date(Date.now() + 3_600_000);
    const local = new Date(at.getTime() + 7 * 3_600_000).toISOString().replace('Z', '+07:00');
    const body = expectOk<DirectSendBody>(await send(ctx, tenant, text([phone()], { scheduledAt: local })), 202);
    expect(body.message.status).toBe('SCHEDULED');
    expect(time(body.message.scheduledAt)).toBe(at.getTime());
  });
});

describe('accepted forms and recipients', () => {
  it('lowercase type and `to` as a string: a direct send answered 200 with the message', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const to = phone();
    const body = await sendDirect(ctx, tenant, { type: 'text', content: 'Hello from Waygate', to: `+${to}` });
    expect(body.messages).toHaveLength(1);
    expect(body.message).toEqual(body.messages[0]);
    expect(body.message).toMatchObject({ direction: 'out', deviceId: device.id, jobId: null, to, from: null, type: 'TEXT', content: 'Hello from Waygate', attempts: 1, error: null });
    expect(body.message.id).toMatch(/^msg_/);
    expect(['SENT', 'DELIVERED', 'READ']).toContain(body.message.status);
    expect(body.message.sentAt).not.toBeNull();
  });

  it('the /v1 overview form: X-API-Key header, `to` as an array, lowercase type', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const [a, b] = phones(2);
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/messages/send',
      headers: { 'X-API-Key': tenant.token },
      payload: { type: 'text', content: 'v1', to: [a!, b!] },
    });
    const body = expectOk<DirectSendBody>(response, 200);
    expect(body.async).toBe(false);
    expect(body.messages.map((m) => m.to)).toEqual([a, b]);
    // The same message is readable without the prefix.
    expect((await getMessage(ctx, tenant, body.message.id)).content).toBe('v1');
  });

  it('recipients and `to` are merged and de-duplicated by phone number (any formatting), in request order', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const [a, b, c] = phones(3) as [string, string, string];
    const formatted = (n: string): string => `+${n.slice(0, 2)} (${n.slice(2, 5)}) ${n.slice(5, 9)}-${n.slice(9)}`;
    const body = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'merge', recipients: [a, b, formatted(a)], to: [formatted(b), c, a] });
    expect(body.messages.map((m) => m.to)).toEqual([a, b, c]);
    expect(new Set(body.messages.map((m) => m.id)).size).toBe(3);
    expect((await listMessages(ctx, tenant)).meta.total).toBe(3);
    expect(await usedMessages(ctx, tenant)).toBe(3);
  });

  it('exactly 10 unique recipients: a direct send, 200 with message (the first) and messages (request order), async false', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const numbers = phones(10);
    const body = await sendDirect(ctx, tenant, text(numbers));
    expect(Object.keys(body).sort()).toEqual(['async', 'message', 'messages', 'success']);
    expect(body.messages.map((m) => m.to)).toEqual(numbers);
    expect(body.message).toEqual(body.messages[0]);
    for (const message of body.messages) {
      expect(['SENT', 'DELIVERED', 'READ']).toContain(message.status);
      expect(message.jobId).toBeNull();
    }
    const job = expectOk<{ data: unknown[] }>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs'));
    expect(job.data).toEqual([]);
  });

  it('11 unique recipients: a bulk job, 202 {success, jobId, status PROCESSING, message naming the count}', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const response = await send(ctx, tenant, text(phones(11)));
    expect(response.statusCode, response.body).toBe(202);
    const body = response.json() as Record<string, unknown>;
    expect(body).toMatchObject({ success: true, status: 'PROCESSING', totalContacts: 11 });
    expect(body.jobId).toMatch(/^job_/);
    expect(body.message).toMatch(/\b11 recipients\b/);
    // async: true tells a bulk job's answer from a direct send's (async: false).
    expect(body.async).toBe(true);
    expect(body).not.toHaveProperty('messages');
    const job = await waitForJob(ctx, tenant, body.jobId as string, (j) => j.status === 'COMPLETED', 'COMPLETED');
    expect(job).toMatchObject({ totalContacts: 11, sentCount: 11, failedCount: 0 });
  });

  it('11 entries that de-duplicate to 10: a direct send', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const numbers = phones(10);
    const body = await sendDirect(ctx, tenant, text([...numbers, numbers[3]!]));
    expect(body.messages.map((m) => m.to)).toEqual(numbers);
  });

  it('6 recipients plus 5 others in `to` make 11: a bulk job', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const numbers = phones(11);
    const body = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'x', recipients: numbers.slice(0, 6), to: numbers.slice(6) });
    expect(body.totalContacts).toBe(11);
  });

  it('a bulk job without groups keeps each recipient once, in request order, whatever its formatting', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const numbers = phones(12);
    const formatted = (n: string): string => `+${n.slice(0, 2)} ${n.slice(2)}`;
    const recipients = [...numbers.slice(0, 6), formatted(numbers[1]!), ...numbers.slice(6), numbers[0]!, formatted(numbers[11]!)];
    const response = await send(ctx, tenant, text(recipients));
    expect(response.statusCode, response.body).toBe(202);
    const body = response.json() as { jobId: string; totalContacts: number };
    expect(body.totalContacts).toBe(12);
    await waitForJob(ctx, tenant, body.jobId, (j) => j.status === 'COMPLETED', 'COMPLETED');
    const page = await listMessages(ctx, tenant, `jobId=${body.jobId}&limit=100`);
    expect(page.meta.total).toBe(12);
    // Message ids follow the job's list, so their order is the list's.
    expect([...page.data].sort((x, y) => (x.id < y.id ? -1 : 1)).map((m) => m.to)).toEqual(numbers);
  });

  it('any groupIds make a bulk job, even for one recipient; the union of recipients and members is de-duplicated', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const [a, b, c, d] = phones(4) as [string, string, string, string];
    const [ca, cb, cc] = [await createContact(ctx, tenant, a), await createContact(ctx, tenant, b), await createContact(ctx, tenant, c)];
    const g1 = expectOk<DataBody<{ id: string }>>(await call(ctx, tenant, 'POST', '/groups', { name: 'g1', contactIds: [ca.id, cb.id] }), 201).data;
    const g2 = expectOk<DataBody<{ id: string }>>(await call(ctx, tenant, 'POST', '/groups', { name: 'g2', contactIds: [cb.id, cc.id] }), 201).data;
    const solo = expectOk<DataBody<{ id: string }>>(await call(ctx, tenant, 'POST', '/groups', { name: 'solo', contactIds: [cc.id] }), 201).data;

    // One group of one member: still a bulk job.
    const single = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'one', groupIds: [solo.id] });
    expect(single.status).toBe('PROCESSING');
    expect(single.totalContacts).toBe(1);
    expect(single.message).toMatch(/\b1 recipient\b/);

    // Recipients a (also in g1) and d, groups g1 {a, b} and g2 {b, c}, g1 twice: a, b, c, d.
    const union = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'union', recipients: [a, d], groupIds: [g1.id, g2.id, g1.id] });
    expect(union.totalContacts).toBe(4);
    expect(union.message).toMatch(/\b4 recipients\b/);
    const job = await waitForJob(ctx, tenant, union.jobId, (j) => j.status === 'COMPLETED', 'COMPLETED');
    expect(job).toMatchObject({ totalContacts: 4, sentCount: 4, failedCount: 0 });
    const messages = await listMessages(ctx, tenant, `jobId=${union.jobId}`);
    expect(messages.meta.total).toBe(4);
    expect(messages.data.map((m) => m.to).sort()).toEqual([a, b, c, d].sort());
    expect(await usedMessages(ctx, tenant)).toBe(5);
  });

  it("an unknown group or another account's group is a 400 naming it; nothing is created", async () => {
    const tenant = await createTenant(ctx);
    const other = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const foreign = await createGroup(ctx, other, [phone()]);
    const mine = await createGroup(ctx, tenant, [phone()]);

    const unknown = expectFieldError(await send(ctx, tenant, { type: 'TEXT', content: 'x', groupIds: ['grp_nope'] }), 'groupIds[0]');
    expect(unknown.message).toContain('grp_nope');
    expectFieldError(await send(ctx, tenant, { type: 'TEXT', content: 'x', groupIds: [mine.id, foreign.id] }), 'groupIds[1]');
    expect((await listMessages(ctx, tenant)).meta.total).toBe(0);
    expect(expectOk<{ meta: { total: number } }>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs')).meta.total).toBe(0);
    expect(await usedMessages(ctx, tenant)).toBe(0);
  });

  it('empty groups and no recipients: 400; an empty group with a recipient: a job of 1', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const empty = await createGroup(ctx, tenant, []);
    const emptyToo = await createGroup(ctx, tenant, [], 'also empty');
    expectFieldError(await send(ctx, tenant, { type: 'TEXT', content: 'x', groupIds: [empty.id, emptyToo.id] }), 'groupIds');
    expect(expectOk<{ meta: { total: number } }>(await call(ctx, tenant, 'GET', '/messages/bulk-jobs')).meta.total).toBe(0);
    expect(await usedMessages(ctx, tenant)).toBe(0);

    const withOne = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'x', groupIds: [empty.id], recipients: [phone()] });
    expect(withOne.totalContacts).toBe(1);
  });
});

describe('the device a message is sent from', () => {
  it('no linked device: 409 NO_CONNECTED_DEVICE (a PENDING device is not linked), for direct and bulk sends', async () => {
    const tenant = await createTenant(ctx);
    expectError(await send(ctx, tenant, text([phone()])), 409, 'NO_CONNECTED_DEVICE');
    const { device } = await addDevice(ctx, tenant);
    expectError(await send(ctx, tenant, text([phone()])), 409, 'NO_CONNECTED_DEVICE');
    expectError(await send(ctx, tenant, text(phones(11))), 409, 'NO_CONNECTED_DEVICE');
    expectError(await send(ctx, tenant, text([phone()], { deviceId: device.id })), 409, 'NO_CONNECTED_DEVICE');
    expect(await usedMessages(ctx, tenant)).toBe(0);
  });

  it("deviceId of another account (or unknown): 404; nothing is created", async () => {
    const tenant = await createTenant(ctx);
    const other = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const foreign = await linkDevice(ctx, other);
    expectError(await send(ctx, tenant, text([phone()], { deviceId: foreign.id })), 404, 'NOT_FOUND');
    expectError(await send(ctx, tenant, text(phones(11), { deviceId: foreign.id })), 404, 'NOT_FOUND');
    expectError(await send(ctx, tenant, text([phone()], { deviceId: 'dev_nope' })), 404, 'NOT_FOUND');
    expect((await listMessages(ctx, tenant)).meta.total).toBe(0);
    expect((await listMessages(ctx, other)).meta.total).toBe(0);
  });

  it('the default is the oldest CONNECTED device; deviceId picks another', async () => {
    const tenant = await createTenant(ctx);
    const older = await linkDevice(ctx, tenant, { name: 'older' });
    const newer = await linkDevice(ctx, tenant, { name: 'newer' });
    const byDefault = await sendDirect(ctx, tenant, text([phone()]));
    expect(byDefault.message.deviceId).toBe(older.id);
    const chosen = await sendDirect(ctx, tenant, text([phone()], { deviceId: newer.id }));
    expect(chosen.message.deviceId).toBe(newer.id);
    const bulk = await sendBulk(ctx, tenant, text(phones(12), { deviceId: newer.id }));
    expect((await getJob(ctx, tenant, bulk.jobId)).deviceId).toBe(newer.id);
    const sandbox = await sandboxMessages(ctx, tenant, { deviceId: newer.id });
    expect(sandbox.data.some((m) => m.to === chosen.message.to)).toBe(true);
  });

  it('a momentarily disconnected device: the send is accepted (202, QUEUED) and goes out once it reconnects', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    // Held: the device stays DISCONNECTED until the test restores it, however long the send takes.
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'network', hold: true }));
    await waitForDevice(ctx, tenant, device.id, 'DISCONNECTED');

    const response = await send(ctx, tenant, text([phone()]));
    const body = expectOk<DirectSendBody>(response, 202);
    // Still a direct send (async: false): its message is in the answer; 202 says it is not acknowledged yet.
    expect(body.async).toBe(false);
    expect(body.message.status).toBe('QUEUED');
    expect(body.message.deviceId).toBe(device.id);
    expect(body.message.sentAt).toBeNull();
    // Still QUEUED while the drop lasts: nothing is sent to a device that is down.
    expect((await getMessage(ctx, tenant, body.message.id)).status).toBe('QUEUED');

    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/restore`));
    await waitForDevice(ctx, tenant, device.id, 'CONNECTED', 8_000);
    const read = await waitForStatus(ctx, tenant, body.message.id, 'READ', 8_000);
    expect(read.attempts).toBeGreaterThanOrEqual(1);
    expect(time(read.sentAt)).toBeGreaterThanOrEqual(time(body.message.createdAt));
  });
});

describe('media', () => {
  it('an unreachable or refused mediaUrl ends the message FAILED with an error code (refunded); the request itself succeeds', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const body = await sendDirect(ctx, tenant, { type: 'image', content: 'the content', caption: 'the caption', mediaUrl: 'http://127.0.0.1:9/photo.png', to: phone() });
    expect(body.message).toMatchObject({ type: 'IMAGE', content: 'the caption', mediaUrl: 'http://127.0.0.1:9/photo.png', status: 'FAILED' });
    expect(body.message.error?.code).toMatch(/^MEDIA_/);
    expect(body.message.failedAt).not.toBeNull();
    expect(await usedMessages(ctx, tenant)).toBe(0);

    // Without a caption, content is the caption.
    const byContent = await sendDirect(ctx, tenant, { type: 'DOCUMENT', content: 'doc caption', mediaUrl: 'http://localhost:8080/file.pdf', recipients: [phone()] });
    expect(byContent.message).toMatchObject({ type: 'DOCUMENT', content: 'doc caption', status: 'FAILED' });
  });
});

describe('the sandbox magic numbers', () => {
  /** A new tenant with a linked device. */
  const setup = async (): Promise<Tenant> => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    return tenant;
  };

  it('a normal number: SENT, then DELIVERED, then READ, with sentAt ≤ deliveredAt ≤ readAt', async () => {
    const tenant = await setup();
    const to = phone();
    const body = await sendDirect(ctx, tenant, text([to]));
    expect(['SENT', 'DELIVERED', 'READ']).toContain(body.message.status);
    const read = await waitForStatus(ctx, tenant, body.message.id, 'READ');
    expect(read.error).toBeNull();
    expect(read.attempts).toBe(1);
    expect(time(read.createdAt)).toBeLessThanOrEqual(time(read.sentAt));
    expect(time(read.sentAt)).toBeLessThanOrEqual(time(read.deliveredAt));
    expect(time(read.deliveredAt)).toBeLessThanOrEqual(time(read.readAt));
    const [seen] = (await sandboxMessages(ctx, tenant, { to })).data;
    expect(seen).toMatchObject({ to, content: 'hello', sendCalls: 1, delivered: 1, read: 1 });
  });

  it('0000: not on the network, FAILED at once with RECIPIENT_NOT_ON_NETWORK, and refunded', async () => {
    const tenant = await setup();
    const to = phone('0000');
    const body = await sendDirect(ctx, tenant, text([to]));
    expect(body.message.status).toBe('FAILED');
    expect(body.message.error).toEqual({ code: 'RECIPIENT_NOT_ON_NETWORK', message: expect.stringContaining(to) as string });
    expect(body.message.attempts).toBe(1);
    expect(body.message.failedAt).not.toBeNull();
    expect(body.message.sentAt).toBeNull();
    expect(await usedMessages(ctx, tenant)).toBe(0);
    expect((await sandboxMessages(ctx, tenant, { to })).meta.total).toBe(0);
    // It stays FAILED (permanent: no retry).
    await sleep(200);
    expect(await getMessage(ctx, tenant, body.message.id)).toMatchObject({ status: 'FAILED', attempts: 1 });
  });

  it('0001: stays SENT, never DELIVERED', async () => {
    const tenant = await setup();
    const [never, control] = [phone('0001'), phone()];
    const body = await sendDirect(ctx, tenant, text([never, control]));
    expect(body.messages[0]!.status).toBe('SENT');
    // Once the control message (sent in the same batch) is READ, and a few receipt rounds later,
    // the 0001 one is still SENT.
    await waitForStatus(ctx, tenant, body.messages[1]!.id, 'READ');
    await sleep(300);
    const still = await getMessage(ctx, tenant, body.messages[0]!.id);
    expect(still).toMatchObject({ status: 'SENT', deliveredAt: null, readAt: null, error: null });
    const [seen] = (await sandboxMessages(ctx, tenant, { to: never })).data;
    expect(seen).toMatchObject({ sendCalls: 1, delivered: 0, read: 0 });
    expect(await usedMessages(ctx, tenant)).toBe(2);
  });

  it('0002: DELIVERED, never READ', async () => {
    const tenant = await setup();
    const [unread, control] = [phone('0002'), phone()];
    const body = await sendDirect(ctx, tenant, text([unread, control]));
    const delivered = await waitForStatus(ctx, tenant, body.messages[0]!.id, 'DELIVERED');
    expect(time(delivered.sentAt)).toBeLessThanOrEqual(time(delivered.deliveredAt));
    await waitForStatus(ctx, tenant, body.messages[1]!.id, 'READ');
    await sleep(300);
    const still = await getMessage(ctx, tenant, body.messages[0]!.id);
    expect(still).toMatchObject({ status: 'DELIVERED', readAt: null });
    const [seen] = (await sandboxMessages(ctx, tenant, { to: unread })).data;
    expect(seen).toMatchObject({ sendCalls: 1, delivered: 1, read: 0 });
  });

  it('0003: a transient failure on the first attempt, then SENT → DELIVERED → READ with 2 attempts; the network saw 2 send calls and 1 delivery', async () => {
    const tenant = await setup();
    const to = phone('0003');
    const response = await send(ctx, tenant, text([to]));
    expect([200, 202]).toContain(response.statusCode);
    const id = (response.json() as DirectSendBody).message.id;
    const read = await waitForStatus(ctx, tenant, id, 'READ', 8_000);
    expect(read.attempts).toBe(2);
    expect(read.error).toBeNull();
    expect(time(read.sentAt)).toBeLessThanOrEqual(time(read.deliveredAt));
    expect(time(read.deliveredAt)).toBeLessThanOrEqual(time(read.readAt));
    const sandbox = await sandboxMessages(ctx, tenant, { to });
    expect(sandbox.meta.total).toBe(1);
    expect(sandbox.data[0]).toMatchObject({ to, sendCalls: 2, delivered: 1, read: 1 });
    expect(await usedMessages(ctx, tenant)).toBe(1);
  });

  it('the same magic rules apply inside one direct send of mixed recipients', async () => {
    const tenant = await setup();
    const numbers = [phone('0000'), phone('0001'), phone('0002'), phone()];
    const body = await sendDirect(ctx, tenant, text(numbers));
    expect(body.messages.map((m) => m.to)).toEqual(numbers);
    expect(body.messages[0]!.status).toBe('FAILED');
    await waitForStatus(ctx, tenant, body.messages[2]!.id, 'DELIVERED');
    await waitForStatus(ctx, tenant, body.messages[3]!.id, 'READ');
    await waitForMessage(ctx, tenant, body.messages[1]!.id, (m) => m.status === 'SENT', 'SENT');
    expect(await usedMessages(ctx, tenant)).toBe(3);
  });
});

describe('direct sends when the API and the worker are separate processes (through the queue)', () => {
  // In one process (serve --role all) a direct send is handed to the worker at once; here the
  // API only inserts it QUEUED and the device's dispatch loop claims it.
  let apart: TestContext;
  beforeAll(async () => {
    apart = await createTestApp(MESSAGING_ENV, { worker: true, directHandOver: false });
  });
  afterAll(async () => apart.close());

  it('answers SENT after the acknowledgement, FAILED for 0000, and retries 0003 with the same network id', async () => {
    const tenant = await createTenant(apart);
    await linkDevice(apart, tenant);
    const ok = await sendDirect(apart, tenant, text([phone()]));
    expect(['SENT', 'DELIVERED', 'READ']).toContain(ok.message.status);
    expect(ok.message.attempts).toBe(1);
    const failed = await sendDirect(apart, tenant, text([phone('0000')]));
    expect(failed.message).toMatchObject({ status: 'FAILED', attempts: 1 });
    const to = phone('0003');
    const retried = await send(apart, tenant, text([to]));
    const id = (retried.json() as DirectSendBody).message.id;
    const read = await waitForStatus(apart, tenant, id, 'READ', 8_000);
    expect(read.attempts).toBe(2);
    const [seen] = (await sandboxMessages(apart, tenant, { to })).data;
    expect(seen).toMatchObject({ sendCalls: 2, delivered: 1 });
  });
});
