/**
 * Message records through the real app and a real worker: GET /messages (filters status, jobId,
 * to, direction, deviceId; pagination, newest first), GET /messages/:id, cancelling a message
 * (SCHEDULED or QUEUED only, refunded), incoming messages from the sandbox, tenancy and scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestContext } from './helpers.js';
import {
  createMessagingApp,
  call,
  expectError,
  expectFieldError,
  expectOk,
  getMessage,
  ISO_MS,
  isoIn,
  linkDevice,
  listMessages,
  phone,
  phones,
  sandboxMessages,
  send,
  sendBulk,
  sendDirect,
  usedMessages,
  waitFor,
  waitForJob,
  waitForStatus,
  type DataBody,
  type DirectSendBody,
  type MessageBody,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

describe('GET /messages and GET /messages/:id', () => {
  it('lists newest first, paginated {success, data, meta}, with filters status, jobId, to, direction and deviceId', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const empty = await listMessages(ctx, tenant);
    expect(empty).toEqual({ success: true, data: [], meta: { total: 0, totalExact: true, page: 1, limit: 50, nextCursor: null } });

    const [a, b] = phones(2) as [string, string];
    const lost = phone('0000');
    const first = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'first', recipients: [a, lost] });
    const second = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'second', to: b });
    const bulk = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'bulk', recipients: phones(11) });
    await waitForJob(ctx, tenant, bulk.jobId, (job) => job.status === 'COMPLETED', 'COMPLETED');

    const all = await listMessages(ctx, tenant);
    expect(all.meta).toEqual({ total: 14, totalExact: true, page: 1, limit: 50, nextCursor: null });
    const created = all.data.map((m) => new Date(m.createdAt).getTime());
    expect(created).toEqual([...created].sort((x, y) => y - x));
    expect(all.data.slice(-3).map((m) => m.id).sort()).toEqual([...first.messages.map((m) => m.id), second.message.id].sort());

    const page = await listMessages(ctx, tenant, 'limit=5&page=3');
    expect(page.meta).toEqual({ total: 14, totalExact: true, page: 3, limit: 5, nextCursor: null });
    expect(page.data.map((m) => m.id)).toEqual(all.data.slice(10, 14).map((m) => m.id));
    expect((await listMessages(ctx, tenant, 'limit=500')).meta.limit).toBe(100);

    const failed = await listMessages(ctx, tenant, 'status=FAILED');
    expect(failed.meta.total).toBe(1);
    expect(failed.data[0]).toMatchObject({ to: lost, status: 'FAILED', error: { code: 'RECIPIENT_NOT_ON_NETWORK' } });

    const ofJob = await listMessages(ctx, tenant, `jobId=${bulk.jobId}`);
    expect(ofJob.meta.total).toBe(11);
    expect(ofJob.data.every((m) => m.jobId === bulk.jobId)).toBe(true);

    const toB = await listMessages(ctx, tenant, `to=${encodeURIComponent(`+${b.slice(0, 2)} ${b.slice(2)}`)}`);
    expect(toB.data.map((m) => m.id)).toEqual([second.message.id]);
    expectFieldError(await call(ctx, tenant, 'GET', '/messages?to=abc'), 'to');

    expect((await listMessages(ctx, tenant, 'direction=out')).meta.total).toBe(14);
    expect((await listMessages(ctx, tenant, 'direction=in')).meta.total).toBe(0);
    expect((await listMessages(ctx, tenant, `deviceId=${device.id}`)).meta.total).toBe(14);

    expectFieldError(await call(ctx, tenant, 'GET', '/messages?status=LOST'), 'status');
    expectFieldError(await call(ctx, tenant, 'GET', '/messages?direction=sideways'), 'direction');
    expectFieldError(await call(ctx, tenant, 'GET', '/messages?page=0'), 'page');
    expectFieldError(await call(ctx, tenant, 'GET', '/messages?color=red'), 'color');
  });

  it('GET /messages/:id reads one message; an unknown id or another account’s id is 404', async () => {
    const tenant = await createTenant(ctx);
    const stranger = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'mine', recipients: [phone()] });
    const read = expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'GET', `/messages/${sent.message.id}`));
    expect(read.success).toBe(true);
    expect(read.data).toMatchObject({ id: sent.message.id, content: 'mine', direction: 'out' });
    expect(read.data.createdAt).toMatch(ISO_MS);

    expectError(await call(ctx, tenant, 'GET', '/messages/msg_nope'), 404, 'NOT_FOUND');
    expectError(await call(ctx, stranger, 'GET', `/messages/${sent.message.id}`), 404, 'NOT_FOUND');
    expectError(await call(ctx, stranger, 'POST', `/messages/${sent.message.id}/cancel`), 404, 'NOT_FOUND');
    expect((await listMessages(ctx, stranger)).meta.total).toBe(0);
    expect((await sandboxMessages(ctx, stranger)).meta.total).toBe(0);
    expectOk(await call(ctx, tenant, 'GET', `/v1/messages/${sent.message.id}`));
  });
});

describe('POST /messages/:id/cancel', () => {
  it('cancels a SCHEDULED message: CANCELLED, refunded, and never sent', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    // Far enough ahead that both are still SCHEDULED when the cancel comes on a busy machine.
    const at = isoIn(6_000);
    const [cancelTo, keepTo] = phones(2) as [string, string];
    const toCancel = expectOk<DirectSendBody>(await send(ctx, tenant, { type: 'TEXT', content: 'cancel me', to: cancelTo, scheduledAt: at }), 202);
    const toKeep = expectOk<DirectSendBody>(await send(ctx, tenant, { type: 'TEXT', content: 'keep me', to: keepTo, scheduledAt: at }), 202);
    expect(toCancel.message.status).toBe('SCHEDULED');
    expect(await usedMessages(ctx, tenant)).toBe(2);

    const cancelled = expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'POST', `/messages/${toCancel.message.id}/cancel`));
    expect(cancelled.data).toMatchObject({ id: toCancel.message.id, status: 'CANCELLED', sentAt: null });
    expect(cancelled.data.cancelledAt).toMatch(ISO_MS);
    expect(await usedMessages(ctx, tenant)).toBe(1);
    const again = expectError(await call(ctx, tenant, 'POST', `/messages/${toCancel.message.id}/cancel`), 409, 'CONFLICT');
    expect(again.error.details).toEqual({ status: 'CANCELLED' });

    // The other message of the same moment goes out; the cancelled one never does.
    await waitFor(async () => ['SENT', 'DELIVERED', 'READ'].includes((await getMessage(ctx, tenant, toKeep.message.id)).status), 20_000, 'the kept message to go out');
    expect((await getMessage(ctx, tenant, toCancel.message.id)).status).toBe('CANCELLED');
    expect((await sandboxMessages(ctx, tenant, { to: cancelTo })).meta.total).toBe(0);
    expect(await usedMessages(ctx, tenant)).toBe(1);
  });

  it('a message already SENT (or later) cannot be cancelled: 409 CONFLICT', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'gone', recipients: [phone('0001')] });
    expect(sent.message.status).toBe('SENT');
    const conflict = expectError(await call(ctx, tenant, 'POST', `/messages/${sent.message.id}/cancel`), 409, 'CONFLICT');
    expect(conflict.error.details).toEqual({ status: 'SENT' });
    const failed = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'lost', recipients: [phone('0000')] });
    expectError(await call(ctx, tenant, 'POST', `/messages/${failed.message.id}/cancel`), 409, 'CONFLICT');
    expectError(await call(ctx, tenant, 'POST', '/messages/msg_nope/cancel'), 404, 'NOT_FOUND');
    expect(await usedMessages(ctx, tenant)).toBe(1);
  });
});

describe('incoming messages', () => {
  it('POST /sandbox/incoming becomes a message with direction in, status RECEIVED and from = the sender', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const sender = phone();
    const played = expectOk<DataBody<{ networkMessageId: string }>>(
      await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: `+${sender}`, type: 'TEXT', content: 'Hi there' }),
      202,
    );
    expect(played.data.networkMessageId).toBeTruthy();
    const inbox = await waitFor(async () => {
      const page = await listMessages(ctx, tenant, 'direction=in');
      return page.meta.total === 1 ? page : undefined;
    }, 5_000, 'the incoming message');
    const [message] = inbox.data;
    expect(message).toMatchObject({ direction: 'in', status: 'RECEIVED', from: sender, to: null, deviceId: device.id, jobId: null, type: 'TEXT', content: 'Hi there', error: null });
    expect(message!.receivedAt).toMatch(ISO_MS);
    expect((await getMessage(ctx, tenant, message!.id)).from).toBe(sender);
    expect((await listMessages(ctx, tenant, 'direction=out')).meta.total).toBe(0);
    expect((await listMessages(ctx, tenant, 'status=RECEIVED')).meta.total).toBe(1);
    expect((await listMessages(ctx, tenant, `to=${sender}`)).meta.total).toBe(1);
    // Incoming messages do not use the quota.
    expect(await usedMessages(ctx, tenant)).toBe(0);

    // A media message, and a second one: each stored once. Its file (on a private address, which
    // this app refuses to fetch) cannot be downloaded: the message is stored, and says why.
    expectOk(
      await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: sender, type: 'IMAGE', content: 'a photo', mediaUrl: 'http://127.0.0.1:9/p.jpg' }),
      202,
    );
    const both = await waitFor(async () => {
      const page = await listMessages(ctx, tenant, 'direction=in');
      return page.meta.total === 2 ? page : undefined;
    }, 5_000, 'the second incoming message');
    expect(both.data[0]).toMatchObject({ type: 'IMAGE', content: 'a photo', mediaUrl: null, status: 'RECEIVED', media: { status: 'FAILED', error: { code: 'MEDIA_URL_REFUSED' } } });

    expectFieldError(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: 'nobody', content: 'x' }), 'from');
  });
});

describe('scopes', () => {
  it('a token with only messages:read gets 403 on POST /messages/send, and may read', async () => {
    const owner = await createTenant(ctx);
    await linkDevice(ctx, owner);
    const { token } = await ctx.services.tokens.create(owner.accountId, { name: 'reader', scopes: ['messages:read'] });
    const reader = { ...owner, token, headers: { 'x-api-key': token } };
    const forbidden = expectError(await send(ctx, reader, { type: 'TEXT', content: 'x', recipients: [phone()] }), 403, 'FORBIDDEN');
    expect(forbidden.error.details).toEqual({ requiredScope: 'messages:send' });
    expectError(await call(ctx, reader, 'POST', '/messages/msg_x/cancel'), 403, 'FORBIDDEN');
    expectError(await call(ctx, reader, 'POST', '/messages/bulk-jobs/job_x/cancel'), 403, 'FORBIDDEN');
    expect((await listMessages(ctx, reader)).meta.total).toBe(0);
    expectOk(await call(ctx, reader, 'GET', '/messages/bulk-jobs'));
    expect(await usedMessages(ctx, owner)).toBe(0);

    const { token: sendOnly } = await ctx.services.tokens.create(owner.accountId, { name: 'sender', scopes: ['messages:send'] });
    const sender = { ...owner, token: sendOnly, headers: { 'x-api-key': sendOnly } };
    await sendDirect(ctx, sender, { type: 'TEXT', content: 'x', recipients: [phone()] });
    expectError(await call(ctx, sender, 'GET', '/messages'), 403, 'FORBIDDEN');
  });

  it('no token: 401', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/messages/send', payload: { type: 'TEXT', content: 'x', recipients: [phone()] } });
    expectError(response, 401, 'UNAUTHORIZED');
  });
});

describe('removing an account', () => {
  it('removes its messages, events and chats with it (triggers, not per-row foreign keys), and nothing of other accounts', async () => {
    const gone = await createTenant(ctx);
    const kept = await createTenant(ctx);
    for (const tenant of [gone, kept]) {
      await linkDevice(ctx, tenant);
      const body = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'bye', recipients: [phone()] });
      await waitForStatus(ctx, tenant, body.message.id, 'READ');
    }
    const count = async (table: 'messages' | 'events' | 'chats', accountId: string): Promise<number> =>
      (await ctx.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE account_id = $1`, [accountId]))[0]!.n;
    expect(await count('messages', gone.accountId)).toBe(1);
    expect(await count('events', gone.accountId)).toBeGreaterThanOrEqual(3);
    expect(await count('chats', gone.accountId)).toBe(1);
    await ctx.database.query('DELETE FROM accounts WHERE id = $1', [gone.accountId]);
    expect(await count('messages', gone.accountId)).toBe(0);
    expect(await count('events', gone.accountId)).toBe(0);
    expect(await count('chats', gone.accountId)).toBe(0);
    expect(await count('messages', kept.accountId)).toBe(1);
    expect(await count('events', kept.accountId)).toBeGreaterThanOrEqual(3);
    expect(await count('chats', kept.accountId)).toBe(1);
  });
});
