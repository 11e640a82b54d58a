/**
 * The added kinds of message (DESIGN.md §9) through the API on the sandbox network: each type
 * sent direct and in a bulk job and what the network got, every field that does not fit its type
 * answered 400 naming it, replies quoting an earlier message, reactions (not counted against the
 * plan), and every kind received from the phone stored with the same fields.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchMedia, MEDIA_LIMITS } from '../src/outbound/media.js';
import { GuardedHttp } from '../src/outbound/ssrf.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import {
  call,
  expectError,
  expectFieldError,
  expectOk,
  getJob,
  linkDevice,
  listMessages,
  MESSAGING_ENV,
  phone,
  phones,
  sandboxMessages,
  send,
  sendBulk,
  sendDirect,
  usedMessages,
  waitFor,
  waitForJob,
  type MessageBody,
  type SandboxMessageBody,
} from './messaging-helpers.js';
import { startWebhookReceiver } from './webhook-receiver.js';

let ctx: TestContext;
let server: http.Server;
let origin = '';
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(2000, 3)]);
const OGG = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(3000, 4)]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(2048, 7)]);

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    const files: Record<string, [string, Buffer]> = {
      '/sticker.webp': ['image/webp', WEBP],
      '/sticker-mislabelled': ['application/octet-stream', WEBP],
      '/not-webp.webp': ['image/webp', PNG],
      '/big.webp': ['image/webp', Buffer.concat([WEBP, Buffer.alloc(MEDIA_LIMITS.STICKER, 1)])],
      '/voice.ogg': ['audio/ogg', OGG],
    };
    const file = files[path];
    if (!file) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': file[0], 'content-length': file[1].length });
    response.end(file[1]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Media comes from this test's own server on 127.0.0.1.
  ctx = await createTestApp({ ...MESSAGING_ENV, ALLOW_PRIVATE_URLS: 'true' }, { worker: true });
});
afterAll(async () => {
  await ctx.close();
  await new Promise((resolve) => server.close(resolve));
});

const LOCATION = { latitude: -6.175392, longitude: 106.827153, name: 'Monas', address: 'Jakarta' };
const CONTACTS = [
  { name: 'Ani', phoneNumber: '+62 812-3450-0001' },
  { name: 'Budi', phoneNumber: '6281234500002' },
];
const POLL = { options: ['Rice', 'Noodles', 'Soup'], multiple: true };

/** One send of each type (REACTION needs a target, so it is in its own tests). */
const kinds = (): Record<string, Record<string, unknown>> => ({
  AUDIO: { type: 'audio', mediaUrl: `${origin}/voice.ogg`, voice: true },
  STICKER: { type: 'STICKER', mediaUrl: `${origin}/sticker.webp` },
  LOCATION: { type: 'LOCATION', content: 'meet here', location: LOCATION },
  CONTACT: { type: 'contact', contacts: CONTACTS },
  POLL: { type: 'POLL', content: 'Lunch?', poll: POLL },
});

/** The message of the account the network got for `to`, once it has it. */
async function received(tenant: Tenant, to: string, count = 1): Promise<SandboxMessageBody[]> {
  return waitFor(
    async () => {
      const items = (await sandboxMessages(ctx, tenant, { to })).data;
      return items.length >= count && items;
    },
    5_000,
    `the network got ${count} message(s) for ${to}`,
  );
}

/** What the record of each kind carries. */
const expected: Record<string, Partial<MessageBody>> = {
  AUDIO: { type: 'AUDIO', content: '', location: null, contacts: null, poll: null, reaction: null, replyTo: null, mentions: null },
  STICKER: { type: 'STICKER', content: '' },
  LOCATION: { type: 'LOCATION', content: 'meet here', location: LOCATION },
  CONTACT: { type: 'CONTACT', content: '', contacts: [{ name: 'Ani', phoneNumber: '6281234500001' }, { name: 'Budi', phoneNumber: '6281234500002' }] },
  POLL: {
    type: 'POLL',
    content: 'Lunch?',
    poll: { options: POLL.options, multiple: true, votes: POLL.options.map((option) => ({ option, count: 0 })) },
  },
};


/** Waits until the account's event log holds exactly `count` events of `type`; returns them. */
function eventsOfType(tenant: Tenant, type: string, count: number): Promise<{ type: string; data: Record<string, unknown> }[]> {
  return waitFor(
    async () => {
      const events = expectOk<{ data: { type: string; data: Record<string, unknown> }[] }>(await call(ctx, tenant, 'GET', `/events?type=${type}&limit=10`)).data;
      return events.length === count && events;
    },
    5_000,
    `${count} ${type} events`,
  );
}

describe('sending each kind', () => {
  // Nine sends (or nine bulk jobs) in turn, each waiting for the network: minutes on a busy machine.
  it('direct: every type is SENT with its fields on the record, and the network gets them', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    for (const [type, body] of Object.entries(kinds())) {
      const to = phone();
      const sent = await sendDirect(ctx, tenant, { ...body, recipients: [to] });
      expect(sent.message, type).toMatchObject({ ...expected[type], status: 'SENT', to });
      const [got] = await received(tenant, to);
      expect(got!.type).toBe(type);
      if (type === 'AUDIO') expect(got).toMatchObject({ mediaBytes: OGG.length, mediaType: 'audio/ogg', payload: { voice: true } });
      if (type === 'STICKER') expect(got).toMatchObject({ mediaBytes: WEBP.length, mediaType: 'image/webp', payload: null });
      if (type === 'LOCATION') expect(got).toMatchObject({ content: 'meet here', payload: { location: LOCATION } });
      if (type === 'CONTACT') expect(got!.payload).toEqual({ contacts: expected.CONTACT!.contacts });
      if (type === 'POLL') expect(got).toMatchObject({ content: 'Lunch?', payload: { poll: { options: POLL.options, multiple: true } } });
    }
  }, 120_000);

  it('bulk: a job of each type copies the kind into every message (with mentions)', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const mentions = [phone(), phone()];
    for (const [type, body] of Object.entries(kinds())) {
      const recipients = phones(11);
      const job = await sendBulk(ctx, tenant, { ...body, recipients, mentions });
      await waitForJob(ctx, tenant, job.jobId, (j) => j.status === 'COMPLETED', `${type} job COMPLETED`);
      expect((await getJob(ctx, tenant, job.jobId)).type).toBe(type);
      const messages = (await listMessages(ctx, tenant, `jobId=${job.jobId}&limit=100`)).data;
      expect(messages).toHaveLength(11);
      for (const message of messages) expect(message).toMatchObject({ ...expected[type], mentions, status: expect.stringMatching(/SENT|DELIVERED|READ/) });
      const [got] = await received(tenant, recipients[10]!);
      expect(got!.payload).toMatchObject({ mentions });
    }
  }, 120_000);

  it('a STICKER that is not WebP, or over 1 MB, ends FAILED with a MEDIA_* code (refunded)', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const notWebp = await sendDirect(ctx, tenant, { type: 'STICKER', mediaUrl: `${origin}/not-webp.webp`, to: phone() });
    expect(notWebp.message).toMatchObject({ status: 'FAILED', error: { code: 'MEDIA_NOT_WEBP' } });
    const big = await sendDirect(ctx, tenant, { type: 'STICKER', mediaUrl: `${origin}/big.webp`, to: phone() });
    expect(big.message).toMatchObject({ status: 'FAILED', error: { code: 'MEDIA_TOO_LARGE' } });
    expect(await usedMessages(ctx, tenant)).toBe(0);
  });

  it('fetchMedia: a sticker is judged by its bytes, not its content type', async () => {
    const open = new GuardedHttp(true);
    expect(await fetchMedia(open, `${origin}/sticker-mislabelled`, 'STICKER')).toMatchObject({ ok: true, media: { mimeType: 'image/webp' } });
    expect(await fetchMedia(open, `${origin}/not-webp.webp`, 'STICKER')).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_NOT_WEBP' });
    expect(await fetchMedia(open, `${origin}/big.webp`, 'STICKER')).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_TOO_LARGE' });
    expect(MEDIA_LIMITS.AUDIO).toBe(MEDIA_LIMITS.VIDEO);
  });
});

describe('validation: a field that does not fit its type is a 400 naming it', () => {
  const to = (): string[] => [phone()];
  const cases: { name: string; body: () => Record<string, unknown>; fields: string[] }[] = [
    { name: 'location on TEXT', body: () => ({ type: 'TEXT', content: 'x', location: LOCATION, recipients: to() }), fields: ['location'] },
    { name: 'voice on VIDEO', body: () => ({ type: 'VIDEO', content: '', mediaUrl: `${origin}/v.mp4`, voice: true, recipients: to() }), fields: ['voice'] },
    { name: 'poll on LOCATION', body: () => ({ type: 'LOCATION', location: LOCATION, poll: POLL, recipients: to() }), fields: ['poll'] },
    { name: 'contacts on POLL', body: () => ({ type: 'POLL', content: 'q', poll: POLL, contacts: CONTACTS, recipients: to() }), fields: ['contacts'] },
    { name: 'reaction on TEXT', body: () => ({ type: 'TEXT', content: 'x', reaction: { messageId: 'msg_x', emoji: '👍' }, recipients: to() }), fields: ['reaction'] },
    { name: 'mediaUrl on LOCATION', body: () => ({ type: 'LOCATION', location: LOCATION, mediaUrl: `${origin}/a.png`, recipients: to() }), fields: ['mediaUrl'] },
    { name: 'caption on AUDIO', body: () => ({ type: 'AUDIO', mediaUrl: `${origin}/voice.ogg`, caption: 'c', recipients: to() }), fields: ['caption'] },
    { name: 'content on STICKER', body: () => ({ type: 'STICKER', content: 'words', mediaUrl: `${origin}/sticker.webp`, recipients: to() }), fields: ['content'] },
    { name: 'AUDIO without mediaUrl', body: () => ({ type: 'AUDIO', recipients: to() }), fields: ['mediaUrl'] },
    { name: 'LOCATION without location', body: () => ({ type: 'LOCATION', recipients: to() }), fields: ['location'] },
    { name: 'latitude out of range', body: () => ({ type: 'LOCATION', location: { latitude: 91, longitude: 0 }, recipients: to() }), fields: ['location.latitude'] },
    { name: 'longitude out of range', body: () => ({ type: 'LOCATION', location: { latitude: 0, longitude: -180.5 }, recipients: to() }), fields: ['location.longitude'] },
    { name: 'CONTACT without contacts', body: () => ({ type: 'CONTACT', recipients: to() }), fields: ['contacts'] },
    { name: 'no contacts', body: () => ({ type: 'CONTACT', contacts: [], recipients: to() }), fields: ['contacts'] },
    { name: '11 contacts', body: () => ({ type: 'CONTACT', contacts: Array.from({ length: 11 }, () => CONTACTS[1]), recipients: to() }), fields: ['contacts'] },
    { name: 'a contact number that is not one', body: () => ({ type: 'CONTACT', contacts: [{ name: 'X', phoneNumber: 'abc' }], recipients: to() }), fields: ['contacts[0].phoneNumber'] },
    { name: 'POLL without a question', body: () => ({ type: 'POLL', content: ' ', poll: POLL, recipients: to() }), fields: ['content'] },
    { name: 'POLL without poll', body: () => ({ type: 'POLL', content: 'q', recipients: to() }), fields: ['poll'] },
    { name: 'one poll option', body: () => ({ type: 'POLL', content: 'q', poll: { options: ['a'] }, recipients: to() }), fields: ['poll.options'] },
    { name: '13 poll options', body: () => ({ type: 'POLL', content: 'q', poll: { options: Array.from({ length: 13 }, (_, i) => `o${i}`) }, recipients: to() }), fields: ['poll.options'] },
    { name: 'repeated poll option', body: () => ({ type: 'POLL', content: 'q', poll: { options: ['a', 'b', 'a'] }, recipients: to() }), fields: ['poll.options[2]'] },
    { name: 'poll option over 100 characters', body: () => ({ type: 'POLL', content: 'q', poll: { options: ['a', 'b'.repeat(101)] }, recipients: to() }), fields: ['poll.options[1]'] },
    { name: 'REACTION without reaction', body: () => ({ type: 'REACTION', recipients: to() }), fields: ['reaction'] },
    { name: 'REACTION to an unknown message', body: () => ({ type: 'REACTION', reaction: { messageId: 'msg_nope', emoji: '👍' }, recipients: to() }), fields: ['reaction.messageId'] },
    { name: 'REACTION with replyTo and mentions', body: () => ({ type: 'REACTION', reaction: { messageId: 'msg_nope', emoji: '👍' }, replyTo: 'msg_x', mentions: [phone()], recipients: to() }), fields: ['replyTo', 'mentions'] },
    { name: 'REACTION as a bulk job', body: () => ({ type: 'REACTION', reaction: { messageId: 'msg_nope', emoji: '👍' }, recipients: phones(11) }), fields: ['type'] },
    { name: 'replyTo an unknown message', body: () => ({ type: 'TEXT', content: 'x', replyTo: 'msg_nope', recipients: to() }), fields: ['replyTo'] },
    { name: 'replyTo in a bulk job', body: () => ({ type: 'TEXT', content: 'x', replyTo: 'msg_nope', recipients: phones(11) }), fields: ['replyTo'] },
    { name: 'a mention that is not a number', body: () => ({ type: 'TEXT', content: 'x', mentions: ['nope'], recipients: to() }), fields: ['mentions[0]'] },
    {
      name: 'several broken fields at once',
      body: () => ({ type: 'POLL', content: '', poll: { options: ['a', 'a'] }, location: LOCATION, recipients: to() }),
      fields: ['content', 'poll.options[1]', 'location'],
    },
  ];

  for (const testCase of cases) {
    it(testCase.name, async () => {
      const tenant = await createTenant(ctx);
      await linkDevice(ctx, tenant);
      const response = await send(ctx, tenant, testCase.body());
      expectError(response, 400, 'VALIDATION_ERROR');
      for (const field of testCase.fields) expectFieldError(response, field);
      expect((await listMessages(ctx, tenant)).meta.total).toBe(0);
    });
  }
});

describe('replies and reactions', () => {
  it('a reply quotes an earlier message of the chat; the network gets its network id; another chat or account is a 400', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const to = phone();
    const first = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'first', to })).message;
    const reply = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'and a reply', to, replyTo: first.id, mentions: [to] });
    expect(reply.message).toMatchObject({ status: 'SENT', replyTo: first.id, mentions: [to] });
    const got = await received(tenant, to, 2);
    expect(got.find((m) => m.content === 'and a reply')!.payload).toEqual({ replyTo: got.find((m) => m.content === 'first')!.networkMessageId, mentions: [to] });

    expectFieldError(await send(ctx, tenant, { type: 'TEXT', content: 'x', to: phone(), replyTo: first.id }), 'replyTo');
    expectFieldError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [to, phone()], replyTo: first.id }), 'replyTo');
    const other = await createTenant(ctx);
    await linkDevice(ctx, other);
    expectFieldError(await send(ctx, other, { type: 'TEXT', content: 'x', to, replyTo: first.id }), 'replyTo');
  });

  it('a reaction is added and removed without counting against the plan, even when the quota is used up', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await linkDevice(ctx, tenant);
    const to = phone();
    const target = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'react to me', to })).message;
    const job = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'fill', recipients: phones(49) });
    expect(await usedMessages(ctx, tenant)).toBe(50);
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'one more', to }), 402, 'QUOTA_EXCEEDED');

    const added = await sendDirect(ctx, tenant, { type: 'reaction', reaction: { messageId: target.id, emoji: '👍' }, to });
    expect(added.message).toMatchObject({ type: 'REACTION', content: '', status: 'SENT', reaction: { messageId: target.id, emoji: '👍' }, replyTo: null });
    const removed = await sendDirect(ctx, tenant, { type: 'REACTION', reaction: { messageId: target.id, emoji: '' }, to });
    expect(removed.message).toMatchObject({ status: 'SENT', reaction: { messageId: target.id, emoji: '' } });
    expect(await usedMessages(ctx, tenant)).toBe(50);

    const got = await received(tenant, to, 3);
    const targetNid = got.find((m) => m.type === 'TEXT')!.networkMessageId;
    expect(got.filter((m) => m.type === 'REACTION').map((m) => m.payload)).toEqual([
      { reaction: { networkMessageId: targetNid, emoji: '👍' } },
      { reaction: { networkMessageId: targetNid, emoji: '' } },
    ]);
    expectFieldError(await send(ctx, tenant, { type: 'REACTION', reaction: { messageId: target.id, emoji: '👍' }, to: phone() }), 'reaction.messageId');
    await waitForJob(ctx, tenant, job.jobId, (j) => j.status === 'COMPLETED', 'COMPLETED');
  });
});

describe('incoming (the sandbox plays the phone)', () => {
  it('every kind is stored with the same fields, direction "in", quoting and reacting to our messages', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const ours = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hello', to: from })).message;
    const incoming: Record<string, unknown>[] = [
      { type: 'AUDIO', content: '', mediaUrl: `${origin}/voice.ogg`, voice: true, replyTo: ours.id },
      { type: 'STICKER', content: '', mediaUrl: `${origin}/sticker.webp` },
      { type: 'LOCATION', content: 'here', location: LOCATION, mentions: [ours.to] },
      { type: 'CONTACT', content: '', contacts: CONTACTS },
      { type: 'POLL', content: 'Lunch?', poll: POLL },
      { type: 'REACTION', content: '', reaction: { messageId: ours.id, emoji: '❤️' } },
    ];
    for (const body of incoming) {
      expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, ...body }), 202);
    }
    const stored = await waitFor(
      async () => {
        const items = (await listMessages(ctx, tenant, 'direction=in&limit=100')).data;
        return items.length === incoming.length && items;
      },
      5_000,
      'every incoming message stored',
    );
    const byType = new Map(stored.map((m) => [m.type, m]));
    const audio = byType.get('AUDIO')!;
    expect(audio).toMatchObject({ direction: 'in', from, status: 'RECEIVED', replyTo: ours.id, mediaUrl: `/messages/${audio.id}/media`, media: { mimeType: 'audio/ogg', status: 'STORED' } });
    expect(byType.get('STICKER')).toMatchObject({ replyTo: null, reaction: null });
    expect(byType.get('LOCATION')).toMatchObject({ content: 'here', location: LOCATION, mentions: [ours.to] });
    expect(byType.get('CONTACT')).toMatchObject({ contacts: expected.CONTACT!.contacts });
    expect(byType.get('POLL')).toMatchObject({ content: 'Lunch?', poll: expected.POLL!.poll });
    expect(byType.get('REACTION')).toMatchObject({ reaction: { messageId: ours.id, emoji: '❤️' } });

    const events = expectOk<{ data: { type: string; data: MessageBody }[] }>(await call(ctx, tenant, 'GET', '/events?limit=100')).data;
    const received = events.filter((e) => e.type === 'message.received').map((e) => e.data);
    expect(received).toHaveLength(incoming.length);
    for (const message of received) expect(message).toEqual(byType.get(message.type));
  });

  it('a quote or reaction of the phone must point at a message of that chat: else 400 naming the field', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const ours = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hello', to: phone() })).message;
    const other = phone();
    expectFieldError(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: other, content: 'x', replyTo: ours.id }), 'replyTo');
    expectFieldError(
      await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: other, type: 'REACTION', content: '', reaction: { messageId: ours.id, emoji: '👍' } }),
      'reaction.messageId',
    );
    expectFieldError(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: other, content: 'x', poll: POLL }), 'poll');
  });
});

describe('reactions and poll votes from the other side (events)', () => {
  it('an incoming reaction to our message writes message.reaction (added, then removed)', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const ours = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hello', to: from })).message;
    for (const emoji of ['😂', '']) {
      expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, type: 'REACTION', content: '', reaction: { messageId: ours.id, emoji } }), 202);
    }
    const reactions = await eventsOfType(tenant, 'message.reaction', 2);
    const stored = (await listMessages(ctx, tenant, 'direction=in&limit=10')).data;
    expect(reactions.map((e) => e.data)).toEqual(
      ['😂', ''].map((emoji) => ({
        messageId: ours.id,
        deviceId: device.id,
        from,
        fromLid: null,
        emoji,
        reactionId: stored.find((m) => m.reaction?.emoji === emoji)!.id,
        at: stored.find((m) => m.reaction?.emoji === emoji)!.receivedAt,
      })),
    );
  });

  it('votes on our poll write poll.vote {messageId, voter, options} and are tallied on the record (a new vote replaces the voter\'s last)', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const [ani, budi] = [phone(), phone()];
    const single = (await sendDirect(ctx, tenant, { type: 'POLL', content: 'Lunch?', poll: { options: ['Rice', 'Noodles'] }, to: ani })).message;
    const multi = (await sendDirect(ctx, tenant, { type: 'POLL', content: 'Toppings?', poll: { options: ['Egg', 'Chili', 'Tofu'], multiple: true }, to: budi })).message;
    const vote = (from: string, messageId: string, options: string[]) =>
      call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, content: '', vote: { messageId, options } });
    expectOk(await vote(ani, single.id, ['Rice']), 202);
    expectOk(await vote(ani, single.id, ['Noodles']), 202);
    expectOk(await vote(budi, multi.id, ['Egg', 'Tofu']), 202);

    const votes = await eventsOfType(tenant, 'poll.vote', 3);
    expect(votes.map((e) => e.data)).toEqual([
      { messageId: single.id, voter: ani, options: ['Rice'] },
      { messageId: single.id, voter: ani, options: ['Noodles'] },
      { messageId: multi.id, voter: budi, options: ['Egg', 'Tofu'] },
    ]);
    const tally = async (id: string): Promise<unknown> => expectOk<{ data: MessageBody }>(await call(ctx, tenant, 'GET', `/messages/${id}`)).data.poll?.votes;
    expect(await tally(single.id)).toEqual([{ option: 'Rice', count: 0 }, { option: 'Noodles', count: 1 }]);
    expect(await tally(multi.id)).toEqual([{ option: 'Egg', count: 1 }, { option: 'Chili', count: 0 }, { option: 'Tofu', count: 1 }]);
    // Votes are not messages.
    expect((await listMessages(ctx, tenant, 'direction=in')).meta.total).toBe(0);

    expectFieldError(await vote(ani, single.id, ['Rice', 'Noodles']), 'vote.options');
    expectFieldError(await vote(ani, single.id, ['Soup']), 'vote.options[0]');
    expectFieldError(await vote(budi, single.id, ['Rice']), 'vote.messageId');
    const text = (await sendDirect(ctx, tenant, { type: 'TEXT', content: 'not a poll', to: ani })).message;
    expectFieldError(await vote(ani, text.id, []), 'vote.messageId');
    expectFieldError(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: ani, content: '', type: 'POLL', vote: { messageId: single.id, options: [] } }), 'type');
  });

  it('a poll sent into a group chat: two members vote, both poll.vote events reach a webhook signed, and the record tallies both', async () => {
    const hook = await startWebhookReceiver();
    const { received } = hook;
    try {
      const tenant = await createTenant(ctx);
      const endpoint = expectOk<{ data: { secret: string } }>(
        await call(ctx, tenant, 'POST', '/webhooks', { url: hook.url, events: ['poll.vote'] }),
        201,
      ).data;
      const device = await linkDevice(ctx, tenant);
      const [ani, budi, cici] = [phone(), phone(), phone()];
      const group = expectOk<{ data: { id: string } }>(await call(ctx, tenant, 'POST', '/sandbox/groups', { deviceId: device.id, name: 'Lunch club', members: [ani, budi, cici] }), 201).data;
      const poll = (await sendDirect(ctx, tenant, { type: 'POLL', content: 'Where?', poll: { options: ['Warung', 'Canteen', 'Park'], multiple: true }, chatIds: [group.id] })).message;
      expect(poll).toMatchObject({ chatId: group.id, status: 'SENT' });

      const vote = (from: string, options: string[], extra: Record<string, unknown> = { group: group.id }) =>
        call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, content: '', vote: { messageId: poll.id, options }, ...extra });
      expectOk(await vote(ani, ['Warung']), 202);
      expectOk(await vote(budi, ['Warung', 'Park']), 202);
      // Only a member votes in the group, and only on a poll of that chat.
      expectFieldError(await vote(phone(), ['Park']), 'from');
      expectFieldError(await vote(cici, ['Park'], {}), 'vote.messageId');

      await waitFor(() => received.length >= 2, 10_000, 'two poll.vote deliveries');
      const verifier = new Webhook(endpoint.secret);
      const bodies = received.map((item) => verifier.verify(item.body, item.headers as Record<string, string>) as { type: string; data: Record<string, unknown> });
      expect(bodies.map((b) => b.type)).toEqual(['poll.vote', 'poll.vote']);
      expect(bodies.map((b) => b.data).sort((a, b) => String(a.voter).localeCompare(String(b.voter)))).toEqual(
        [
          { messageId: poll.id, voter: ani, options: ['Warung'] },
          { messageId: poll.id, voter: budi, options: ['Warung', 'Park'] },
        ].sort((a, b) => a.voter.localeCompare(b.voter)),
      );
      const record = expectOk<{ data: MessageBody }>(await call(ctx, tenant, 'GET', `/messages/${poll.id}`)).data;
      expect(record.poll?.votes).toEqual([
        { option: 'Warung', count: 2 },
        { option: 'Canteen', count: 0 },
        { option: 'Park', count: 1 },
      ]);
      expect(received).toHaveLength(2);
    } finally {
      await hook.close();
    }
  });
});
