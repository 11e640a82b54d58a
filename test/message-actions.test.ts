/**
 * Actions on a message after it was sent (DESIGN.md §9), through the API on the sandbox network:
 * an edit within the network's window and 409 NOT_EDITABLE after it (time is moved by setting
 * sentAt back in the database, never by sleeping), a delete for everyone (48 hours; a queued
 * message is cancelled instead), read receipts for incoming messages, the other side editing and
 * deleting its own messages, the message.edited and message.deleted events delivered and signed,
 * none of it counted against the plan; and bad input (unknown and other accounts' ids, wrong types).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret } from '../src/outbound/standard-webhooks.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import {
  call,
  expectError,
  expectFieldError,
  expectOk,
  getMessage,
  linkDevice,
  MESSAGING_ENV,
  phone,
  sandboxMessages,
  send,
  sendDirect,
  usedMessages,
  waitFor,
  type DataBody,
  type MessageBody,
} from './messaging-helpers.js';
import { startWebhookReceiver } from './webhook-receiver.js';

let ctx: TestContext;
let media: http.Server;
let origin = '';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(512, 7)]);

beforeAll(async () => {
  media = http.createServer((_request, response) => response.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length }).end(PNG));
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
  ctx = await createTestApp({ ...MESSAGING_ENV, ALLOW_PRIVATE_URLS: 'true', WEBHOOK_RETRY_SCHEDULE: '0,100ms,200ms' }, { worker: true });
});
afterAll(async () => {
  await ctx?.close();
  await new Promise((resolve) => media.close(resolve));
});

type Event = { type: string; seq: number; data: Record<string, unknown> };

function eventsOfType(tenant: Tenant, type: string, count: number): Promise<Event[]> {
  return waitFor(
    async () => {
      const events = expectOk<{ data: Event[] }>(await call(ctx, tenant, 'GET', `/events?type=${type}&limit=20`)).data;
      return events.length === count && events;
    },
    10_000,
    `${count} ${type} events`,
  );
}

/** Moves a message's time on the network back by `ms` (sentAt, or receivedAt of an incoming one). */
async function age(id: string, ms: number): Promise<void> {
  await ctx.database.query(
    `UPDATE messages SET sent_at = sent_at - $2 * interval '1 millisecond', received_at = received_at - $2 * interval '1 millisecond' WHERE id = $1`,
    [id, ms],
  );
}

/** The sandbox network's copy of a sent message, once `accept` holds. */
async function onNetwork(tenant: Tenant, to: string, accept: (m: Awaited<ReturnType<typeof sandboxMessages>>['data'][number]) => boolean, what: string) {
  return waitFor(async () => (await sandboxMessages(ctx, tenant, { to })).data.find(accept), 10_000, what);
}

/** An incoming TEXT from `from`, as stored. */
async function incoming(tenant: Tenant, deviceId: string, from: string, content: string): Promise<MessageBody> {
  expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId, from, content }), 202);
  return waitFor(async () => (await listMessages(tenant, `direction=in&to=${from}`)).find((m) => m.content === content), 10_000, 'the incoming message');
}

async function listMessages(tenant: Tenant, query: string): Promise<MessageBody[]> {
  return expectOk<{ data: MessageBody[] }>(await call(ctx, tenant, 'GET', `/messages?${query}`)).data;
}

const FIFTEEN_MINUTES = 15 * 60 * 1000;
const HOURS_48 = 48 * 3600 * 1000;

describe('edit (PATCH /messages/:id)', () => {
  it('edits a sent TEXT within 15 minutes: the record, a message.edited event and the network; not counted against the plan', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    const to = phone();
    const sent = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'See you at 5', to })).message;
    const used = await usedMessages(ctx, tenant);
    await age(sent.id, FIFTEEN_MINUTES - 60_000);

    const edited = expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'PATCH', `/messages/${sent.id}`, { content: 'See you at 6' })).data;
    expect(edited).toMatchObject({ id: sent.id, content: 'See you at 6', deletedAt: null });
    expect(edited.editedAt).not.toBeNull();
    // The sandbox's receipts may move status and deliveredAt on meanwhile: the edit is what must read back.
    expect(await getMessage(ctx, tenant, sent.id)).toMatchObject({ id: sent.id, content: 'See you at 6', editedAt: edited.editedAt, deletedAt: null });
    const [event] = await eventsOfType(tenant, 'message.edited', 1);
    expect(event!.data).toMatchObject({ id: sent.id, content: 'See you at 6', editedAt: edited.editedAt });
    const copy = await onNetwork(tenant, to, (m) => m.editedAt !== null, 'the edit on the network');
    expect(copy.content).toBe('See you at 6');
    expect(await usedMessages(ctx, tenant)).toBe(used);
  });

  it('edits the caption of an IMAGE', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const to = phone();
    const sent = (await sendDirect(ctx, tenant, { type: 'IMAGE', mediaUrl: `${origin}/a.png`, content: 'a cat', to })).message;
    expect(expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'PATCH', `/messages/${sent.id}`, { content: 'a dog' })).data.content).toBe('a dog');
    expect((await onNetwork(tenant, to, (m) => m.editedAt !== null, 'the caption edit')).content).toBe('a dog');
    expectFieldError(await call(ctx, tenant, 'PATCH', `/messages/${sent.id}`, { content: 'x'.repeat(1025) }), 'content');
  });

  it('answers 409 NOT_EDITABLE after the window, for another type, a message not sent, an incoming or a deleted one', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const to = phone();
    const late = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'old', to })).message;
    await age(late.id, FIFTEEN_MINUTES + 1_000);
    const poll = (await sendDirect(ctx, tenant, { type: 'POLL', content: 'Lunch?', poll: { options: ['Rice', 'Noodles'] }, to })).message;
    const scheduled = expectOk<{ message: MessageBody }>(await send(ctx, tenant, { type: 'TEXT', content: 'later', to, scheduledAt: new Date(Date.now() + 3_600_000).toISOString() }), 202).message;
    const failed = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'nobody', to: phone('0000') })).message;
    const fromThem = await incoming(tenant, device.id, to, 'their words');
    const deleted = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'gone', to })).message;
    expectOk(await call(ctx, tenant, 'DELETE', `/messages/${deleted.id}`));

    for (const [message, reason] of [
      [late, /15 minutes/],
      [poll, /POLL/],
      [scheduled, /SCHEDULED.*cancel/],
      [failed, /FAILED/],
      [fromThem, /account sent/],
      [deleted, /deleted/],
    ] as const) {
      const body = expectError(await call(ctx, tenant, 'PATCH', `/messages/${message.id}`, { content: 'new' }), 409, 'NOT_EDITABLE');
      expect(body.error.message).toMatch(reason);
      expect((await getMessage(ctx, tenant, message.id)).editedAt).toBeNull();
    }
    expect(expectOk<{ data: Event[] }>(await call(ctx, tenant, 'GET', '/events?type=message.edited')).data).toHaveLength(0);
  });

  it('the sandbox network enforces the same window: an edit that reaches it too late is refused there (NOT_EDITABLE)', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const to = phone();
    const sent = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'first', to })).message;
    // The network took it 16 minutes ago; Waygate's record says 14 (as if the device had been offline between).
    await ctx.database.query(`UPDATE sandbox_messages SET accepted_at = accepted_at - interval '16 minutes' WHERE device_id = $1`, [device.id]);
    await age(sent.id, FIFTEEN_MINUTES - 60_000);
    expectOk(await call(ctx, tenant, 'PATCH', `/messages/${sent.id}`, { content: 'second' }));
    // The network refuses it for good: the action is given up (due_at NULL) with the network's code.
    const refused = await waitFor(
      async () => (await ctx.database.query<{ error_code: string | null }>('SELECT error_code FROM message_actions WHERE message_id = $1 AND due_at IS NULL', [sent.id]))[0],
      10_000,
      'the network refusing the edit',
    );
    expect(refused.error_code).toBe('NOT_EDITABLE');
    expect((await sandboxMessages(ctx, tenant, { to })).data[0]).toMatchObject({ content: 'first', editedAt: null });
  });
});

describe('delete for everyone (DELETE /messages/:id)', () => {
  it('deletes a sent message on the network, keeps its content, writes message.deleted; again changes nothing; after 48 hours 409 NOT_DELETABLE', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    const to = phone();
    const sent = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'oops', to })).message;
    const used = await usedMessages(ctx, tenant);
    await age(sent.id, HOURS_48 - 60_000);
    const deleted = expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'DELETE', `/messages/${sent.id}`)).data;
    expect(deleted).toMatchObject({ id: sent.id, content: 'oops' });
    expect(deleted.deletedAt).not.toBeNull();
    expect(expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'DELETE', `/messages/${sent.id}`)).data.deletedAt).toBe(deleted.deletedAt);
    const [event] = await eventsOfType(tenant, 'message.deleted', 1);
    expect(event!.data).toMatchObject({ id: sent.id, deletedAt: deleted.deletedAt });
    await onNetwork(tenant, to, (m) => m.deletedAt !== null, 'the delete on the network');
    expect(await usedMessages(ctx, tenant)).toBe(used);

    const old = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'too old', to })).message;
    await age(old.id, HOURS_48 + 1_000);
    expect(expectError(await call(ctx, tenant, 'DELETE', `/messages/${old.id}`), 409, 'NOT_DELETABLE').error.message).toMatch(/48 hours/);
  });

  it('a SCHEDULED message is cancelled (and refunded) instead; an incoming one or a reaction is 409 NOT_DELETABLE', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    const device = await linkDevice(ctx, tenant);
    const to = phone();
    const before = await usedMessages(ctx, tenant);
    const scheduled = expectOk<{ message: MessageBody }>(await send(ctx, tenant, { type: 'TEXT', content: 'later', to, scheduledAt: new Date(Date.now() + 3_600_000).toISOString() }), 202).message;
    expect(await usedMessages(ctx, tenant)).toBe(before + 1);
    const cancelled = expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'DELETE', `/messages/${scheduled.id}`)).data;
    expect(cancelled.status).toBe('CANCELLED');
    expect(cancelled.deletedAt).not.toBeNull();
    expect(await usedMessages(ctx, tenant)).toBe(before);
    expect((await sandboxMessages(ctx, tenant, { to })).data).toHaveLength(0);

    const theirs = await incoming(tenant, device.id, to, 'hello');
    expectError(await call(ctx, tenant, 'DELETE', `/messages/${theirs.id}`), 409, 'NOT_DELETABLE');
    const reaction = (await sendDirect(ctx, tenant, { type: 'REACTION', reaction: { messageId: theirs.id, emoji: '👍' }, to })).message;
    expect(expectError(await call(ctx, tenant, 'DELETE', `/messages/${reaction.id}`), 409, 'NOT_DELETABLE').error.message).toMatch(/emoji ""/);
  });
});

describe('read receipts (POST /messages/:id/read)', () => {
  it('marks an incoming message read and sends the receipt to the network once; an outgoing message is 409', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const theirs = await incoming(tenant, device.id, from, 'are you there?');
    expect(theirs.readAt).toBeNull();
    const read = expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'POST', `/messages/${theirs.id}/read`)).data;
    expect(read.readAt).not.toBeNull();
    expect(read.status).toBe('RECEIVED');
    expect(expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'POST', `/messages/${theirs.id}/read`)).data.readAt).toBe(read.readAt);
    const [row] = await ctx.database.query<{ network_message_id: string }>('SELECT network_message_id FROM messages WHERE id = $1', [theirs.id]);
    // The worker hands the receipt to the network, then deletes the action in its own statement:
    // wait for both, then check the network holds the receipt once.
    const reads = async () => (await ctx.database.query('SELECT 1 FROM sandbox_reads WHERE device_id = $1 AND network_message_id = $2', [device.id, row!.network_message_id])).length;
    await waitFor(
      async () => (await reads()) >= 1 && (await ctx.database.query('SELECT 1 FROM message_actions WHERE message_id = $1', [theirs.id])).length === 0,
      15_000,
      'the read receipt on the network and its action done',
    );
    expect(await reads()).toBe(1);

    const ours = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'yes', to: from })).message;
    expectError(await call(ctx, tenant, 'POST', `/messages/${ours.id}/read`), 409, 'CONFLICT');
  });

  it('GET /sandbox/reads lists the receipts the network got, with their chat, to their account only', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const [alice, bob] = [phone(), phone()];
    const first = await incoming(tenant, device.id, alice, 'one');
    const second = await incoming(tenant, device.id, bob, 'two');
    for (const message of [first, second]) expectOk(await call(ctx, tenant, 'POST', `/messages/${message.id}/read`));
    type Reads = { data: { deviceId: string; networkMessageId: string; chat: string | null; readAt: string }[]; meta: { total: number } };
    const list = async (owner: Tenant, query = '') => expectOk<Reads>(await call(ctx, owner, 'GET', `/sandbox/reads${query}`));
    await waitFor(async () => (await list(tenant)).meta.total === 2, 15_000, 'both receipts on the network');
    const networkIds = await ctx.database.query<{ id: string; network_message_id: string }>('SELECT id, network_message_id FROM messages WHERE id = ANY($1::text[])', [[first.id, second.id]]);
    const networkIdOf = (id: string) => networkIds.find((row) => row.id === id)!.network_message_id;
    const fromAlice = await list(tenant, `?chat=%2B${alice}`);
    expect(fromAlice.data).toEqual([{ deviceId: device.id, networkMessageId: networkIdOf(first.id), chat: alice, readAt: expect.any(String) }]);
    expect((await list(tenant, `?deviceId=${device.id}&chat=${bob}`)).data.map((read) => read.networkMessageId)).toEqual([networkIdOf(second.id)]);
    expect((await list(await createTenant(ctx))).meta.total).toBe(0);
    expectError(await call(ctx, tenant, 'GET', '/sandbox/reads?chat=12'), 400, 'VALIDATION_ERROR');
  });
});

describe('the other side edits and deletes its messages (the sandbox plays them)', () => {
  it('writes message.edited and message.deleted on our record, within the same windows (else 409)', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const theirs = await incoming(tenant, device.id, from, 'meet at 5');
    const play = (body: Record<string, unknown>) => call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, content: '', ...body });
    expectOk(await play({ edit: { messageId: theirs.id, content: 'meet at 6' } }), 202);
    const [edited] = await eventsOfType(tenant, 'message.edited', 1);
    expect(edited!.data).toMatchObject({ id: theirs.id, direction: 'in', from, content: 'meet at 6' });
    expect((await getMessage(ctx, tenant, theirs.id)).editedAt).not.toBeNull();

    expectOk(await play({ delete: { messageId: theirs.id } }), 202);
    const [deleted] = await eventsOfType(tenant, 'message.deleted', 1);
    expect(deleted!.data).toMatchObject({ id: theirs.id, content: 'meet at 6' });
    expect((await getMessage(ctx, tenant, theirs.id)).deletedAt).not.toBeNull();
    expectError(await play({ delete: { messageId: theirs.id } }), 409, 'NOT_DELETABLE');
    expectError(await play({ edit: { messageId: theirs.id, content: 'again' } }), 409, 'NOT_EDITABLE');

    const old = await incoming(tenant, device.id, from, 'yesterday');
    await age(old.id, FIFTEEN_MINUTES + 1_000);
    expect(expectError(await play({ edit: { messageId: old.id, content: 'late' } }), 409, 'NOT_EDITABLE').error.message).toMatch(/15 minutes/);
    await age(old.id, HOURS_48);
    expectError(await play({ delete: { messageId: old.id } }), 409, 'NOT_DELETABLE');
    // Our own message is not theirs to change; another chat's message is not in this chat.
    const ours = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'mine', to: from })).message;
    expectError(await play({ edit: { messageId: ours.id, content: 'hacked' } }), 409, 'NOT_EDITABLE');
    const other = await incoming(tenant, device.id, phone(), 'other chat');
    expectFieldError(await play({ delete: { messageId: other.id } }), 'delete.messageId');
    expectFieldError(await play({ edit: { messageId: old.id, content: 'x' }, type: 'TEXT' }), 'type');
    expectFieldError(await play({ edit: { messageId: old.id, content: 'x' }, content: 'y' }), 'content');
  });
});

describe('events are delivered and signed', () => {
  it('message.edited and message.deleted reach a webhook, verified with standardwebhooks', async () => {
    const hook = await startWebhookReceiver();
    const { received } = hook;
    try {
      const tenant = await createTenant(ctx);
      const secret = newWebhookSecret();
      const url = hook.url;
      await ctx.database.query(`INSERT INTO webhook_endpoints (id, account_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)`, [
        `wh_${Math.random().toString(36).slice(2, 14)}`,
        tenant.accountId,
        url,
        ['message.edited', 'message.deleted'],
        secret,
      ]);
      await linkDevice(ctx, tenant);
      const sent = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'draft', to: phone() })).message;
      expectOk(await call(ctx, tenant, 'PATCH', `/messages/${sent.id}`, { content: 'final' }));
      expectOk(await call(ctx, tenant, 'DELETE', `/messages/${sent.id}`));
      await waitFor(() => received.length >= 2, 10_000, 'two deliveries');
      const verifier = new Webhook(secret);
      const bodies = received.map((item) => verifier.verify(item.body, item.headers as Record<string, string>) as { type: string; data: MessageBody });
      expect(bodies.map((b) => b.type).sort()).toEqual(['message.deleted', 'message.edited']);
      expect(bodies.every((b) => b.data.id === sent.id && b.data.content === 'final')).toBe(true);
    } finally {
      await hook.close();
    }
  });
});

describe('bad input', () => {
  it('unknown ids and another account\'s ids are 404; wrong types are 400 naming the field', async () => {
    const tenant = await createTenant(ctx);
    const other = await createTenant(ctx);
    await linkDevice(ctx, other);
    const theirs = (await sendDirect(ctx, other, { type: 'TEXT', content: 'private', to: phone() })).message;
    for (const id of ['msg_unknown', theirs.id]) {
      expectError(await call(ctx, tenant, 'PATCH', `/messages/${id}`, { content: 'x' }), 404, 'NOT_FOUND');
      expectError(await call(ctx, tenant, 'DELETE', `/messages/${id}`), 404, 'NOT_FOUND');
      expectError(await call(ctx, tenant, 'POST', `/messages/${id}/read`), 404, 'NOT_FOUND');
    }
    expect((await getMessage(ctx, other, theirs.id)).content).toBe('private');
    expectFieldError(await call(ctx, other, 'PATCH', `/messages/${theirs.id}`, { content: 5 }), 'content');
    expectFieldError(await call(ctx, other, 'PATCH', `/messages/${theirs.id}`, {}), 'content');
    expectFieldError(await call(ctx, other, 'PATCH', `/messages/${theirs.id}`, { content: 'x', type: 'TEXT' }), 'type');
    expectFieldError(await call(ctx, other, 'PATCH', `/messages/${theirs.id}`, { content: '   ' }), 'content');
    expectFieldError(await call(ctx, other, 'PATCH', `/messages/${theirs.id}`, { content: 'x'.repeat(4097) }), 'content');
  });
});
