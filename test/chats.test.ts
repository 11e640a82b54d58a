/**
 * Conversations on the sandbox network, as a new user meets them (DESIGN.md section 10): chats
 * made by traffic both ways and by group chats, unread counts and reading, a chat's history paged
 * by keyset, sending into a group chat, the groups a device administers, number look-ups, and
 * the unhappy paths.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatDetailJson, ChatJson, ChatPresence } from '../src/conversations/chat-record.js';
import type { Jsonified } from '../src/platform/record-schema.js';
import { startWebhookReceiver } from './webhook-receiver.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import {
  call,
  expectError,
  expectFieldError,
  expectOk,
  linkDevice,
  MESSAGING_ENV,
  phone,
  sandboxMessages,
  sendDirect,
  waitFor,
  type DataBody,
  type MessageBody,
} from './messaging-helpers.js';

let ctx: TestContext;

// The app's start (migrations) and the 10,000-message history take long on a loaded machine.
beforeAll(async () => {
  // Private URLs allowed: a webhook receiver listens on loopback.
  ctx = await createTestApp({ ...MESSAGING_ENV, ALLOW_PRIVATE_URLS: 'true' }, { worker: true });
}, 180_000);

afterAll(async () => {
  await ctx?.close();
});

interface ChatList {
  success: true;
  data: ChatJson[];
  meta: { total: number; totalExact: boolean; page: number; limit: number; nextCursor: string | null };
}
interface History {
  success: true;
  data: MessageBody[];
  meta: { limit: number; nextBefore: string | null };
}
interface CreatedGroup {
  id: string;
  deviceId: string;
  name: string;
  members: string[];
}

const listChats = async (tenant: Tenant, query = ''): Promise<ChatList> => expectOk<ChatList>(await call(ctx, tenant, 'GET', `/chats${query}`));
const getChat = async (tenant: Tenant, id: string, query = ''): Promise<ChatDetailJson> =>
  expectOk<DataBody<ChatDetailJson>>(await call(ctx, tenant, 'GET', `/chats/${encodeURIComponent(id)}${query}`)).data;

async function incoming(tenant: Tenant, deviceId: string, from: string, content: string, extra: Record<string, unknown> = {}): Promise<void> {
  expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId, from, content, ...extra }), 202);
}

async function createGroup(tenant: Tenant, deviceId: string, name: string, members: string[]): Promise<CreatedGroup> {
  return expectOk<DataBody<CreatedGroup>>(await call(ctx, tenant, 'POST', '/sandbox/groups', { deviceId, name, members }), 201).data;
}

describe('chats from traffic', () => {
  it('incoming messages from three people and one group make four chats with the right unread counts; reading and replying land in the right chat', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const [alice, bob, carol, dave] = [phone(), phone(), phone(), phone()];
    const group = await createGroup(tenant, device.id, 'Family', [alice, dave]);
    expect(group.id).toMatch(/^\d+@g\.us$/);
    expect(group.members[0]).toBe(device.phoneNumber);

    await incoming(tenant, device.id, alice, 'hi from alice');
    await incoming(tenant, device.id, alice, 'are you there?');
    await incoming(tenant, device.id, bob, 'hello from bob');
    await incoming(tenant, device.id, carol, 'one');
    await incoming(tenant, device.id, carol, 'two');
    await incoming(tenant, device.id, carol, 'three');
    await incoming(tenant, device.id, dave, 'hi all', { group: group.id });

    const list = await waitFor(
      async () => {
        const body = await listChats(tenant);
        const total = body.data.reduce((sum, chat) => sum + chat.unreadCount, 0);
        return body.data.length === 4 && total === 7 ? body : undefined;
      },
      10_000,
      'four chats with 7 unread',
    );
    const byId = new Map(list.data.map((chat) => [chat.id, chat]));
    expect(byId.get(alice)).toMatchObject({ type: 'direct', phoneNumber: alice, unreadCount: 2, deviceId: device.id, participantsCount: null });
    expect(byId.get(bob)!.unreadCount).toBe(1);
    expect(byId.get(carol)).toMatchObject({ unreadCount: 3, lastMessage: { content: 'three', direction: 'in', from: carol, chatId: carol } });
    expect(byId.get(group.id)).toMatchObject({ type: 'group', name: 'Family', unreadCount: 1, participantsCount: 3, phoneNumber: null });
    expect(byId.get(group.id)!.lastMessage).toMatchObject({ content: 'hi all', from: dave, chatId: group.id });
    // Newest activity first.
    expect(list.data[0]!.id).toBe(group.id);
    expect(list.meta).toMatchObject({ total: 4, page: 1, nextCursor: null });

    const detail = await getChat(tenant, group.id);
    expect(detail.participants).toEqual(
      expect.arrayContaining([
        { phoneNumber: device.phoneNumber, lid: null, admin: true },
        { phoneNumber: alice, lid: null, admin: false },
        { phoneNumber: dave, lid: null, admin: false },
      ]),
    );
    expect((await getChat(tenant, alice)).participants).toBeNull();
    expect((await listChats(tenant, '?type=group')).data.map((c) => c.id)).toEqual([group.id]);
    expect((await listChats(tenant, `?search=${bob.slice(-6)}`)).data.map((c) => c.id)).toEqual([bob]);

    // Reading: unread 0, and the listing says so.
    const read = expectOk<DataBody<ChatDetailJson>>(await call(ctx, tenant, 'POST', `/chats/${carol}/read`));
    expect(read.data.unreadCount).toBe(0);
    expect((await getChat(tenant, carol)).unreadCount).toBe(0);
    expectOk(await call(ctx, tenant, 'POST', `/chats/${carol}/presence`, { state: 'typing' }));

    // Replying from the API lands in Bob's chat, which becomes the newest.
    const reply = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hi bob', recipients: [`+${bob}`] });
    expect(reply.message.chatId).toBe(bob);
    await waitFor(async () => (await listChats(tenant)).data[0]?.lastMessage?.id === reply.message.id, 5_000, "the reply as Bob's chat's last message");
    const bobChat = await getChat(tenant, bob);
    expect(bobChat).toMatchObject({ unreadCount: 1, lastMessage: { id: reply.message.id, direction: 'out', to: bob } });
    const history = expectOk<History>(await call(ctx, tenant, 'GET', `/chats/${bob}/messages`));
    expect(history.data.map((m) => m.content)).toEqual(['hi bob', 'hello from bob']);
    expect(history.meta.nextBefore).toBeNull();
  });

  it('on the sandbox, a chat read reaches the network as a receipt per unread message, and presence as the last state shown', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const [alice, bob] = [phone(), phone()];
    const played: string[] = [];
    for (const content of ['one', 'two']) {
      played.push(expectOk<DataBody<{ networkMessageId: string }>>(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: alice, content }), 202).data.networkMessageId);
    }
    await incoming(tenant, device.id, bob, 'not read');
    await waitFor(async () => (await listChats(tenant)).meta.total === 2, 10_000, 'both chats');
    type Reads = { data: { networkMessageId: string; chat: string | null }[]; meta: { total: number } };
    const reads = async (query = '') => expectOk<Reads>(await call(ctx, tenant, 'GET', `/sandbox/reads${query}`));
    expectOk(await call(ctx, tenant, 'POST', `/chats/${alice}/read`));
    await waitFor(async () => (await reads()).meta.total === 2, 15_000, "the chat's two receipts on the network");
    expect((await reads(`?chat=${alice}`)).data.map((read) => read.networkMessageId).sort()).toEqual([...played].sort());
    expect((await reads(`?chat=${bob}`)).meta.total).toBe(0);

    type Presence = { data: { deviceId: string; chat: string; state: string; at: string }[]; meta: { total: number } };
    const presence = async (query = '') => expectOk<Presence>(await call(ctx, tenant, 'GET', `/sandbox/presence${query}`));
    expectOk(await call(ctx, tenant, 'POST', `/chats/${alice}/presence`, { state: 'typing' }));
    await waitFor(async () => (await presence()).data[0]?.state === 'typing', 15_000, 'typing shown');
    expectOk(await call(ctx, tenant, 'POST', `/chats/${alice}/presence`, { state: 'paused' }));
    await waitFor(async () => (await presence()).data[0]?.state === 'paused', 15_000, 'then paused');
    expect((await presence(`?deviceId=${device.id}&chat=%2B${alice}`)).data).toEqual([{ deviceId: device.id, chat: alice, state: 'paused', at: expect.any(String) }]);
    expect((await presence(`?chat=${bob}`)).meta.total).toBe(0);
    expect(expectOk<Presence>(await call(ctx, await createTenant(ctx), 'GET', '/sandbox/presence')).meta.total).toBe(0);
  });

  it("a contact's presence (typing, recording, online, offline) is a chat.presence event, signed to a webhook; in a group it names the group", async () => {
    const hook = await startWebhookReceiver();
    try {
      const tenant = await createTenant(ctx);
      const endpoint = expectOk<DataBody<{ secret: string }>>(await call(ctx, tenant, 'POST', '/webhooks', { url: hook.url, events: ['chat.presence'] }), 201).data;
      const device = await linkDevice(ctx, tenant);
      const [alice, bob] = [phone(), phone()];
      const group = await createGroup(tenant, device.id, 'Choir', [alice, bob]);
      const play = (from: string, presence: string, extra: Record<string, unknown> = {}) =>
        call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from, content: '', presence, ...extra });
      for (const state of ['typing', 'recording', 'online', 'offline']) expectOk(await play(alice, state), 202);
      expectOk(await play(bob, 'typing', { group: group.id }), 202);

      type PresenceEvent = { type: string; seq: number; data: Jsonified<ChatPresence> };
      const events = await waitFor(async () => {
        const page = expectOk<{ data: PresenceEvent[] }>(await call(ctx, tenant, 'GET', '/events?type=chat.presence&limit=10')).data;
        return page.length === 5 && page;
      }, 15_000, 'five chat.presence events');
      const base = { deviceId: device.id, fromLid: null, at: expect.any(String) };
      expect(events.map((event) => event.data)).toEqual([
        { ...base, chatId: alice, from: alice, state: 'typing', lastSeen: null },
        { ...base, chatId: alice, from: alice, state: 'recording', lastSeen: null },
        { ...base, chatId: alice, from: alice, state: 'online', lastSeen: null },
        { ...base, chatId: alice, from: alice, state: 'offline', lastSeen: expect.any(String) },
        { ...base, chatId: group.id, from: bob, state: 'typing', lastSeen: null },
      ]);
      const offline = events[3]!.data;
      expect(Date.parse(offline.lastSeen!)).toBeLessThanOrEqual(Date.parse(offline.at));

      await waitFor(() => hook.received.length >= 5, 15_000, 'five deliveries');
      const verifier = new Webhook(endpoint.secret);
      const delivered = hook.received.map((item) => verifier.verify(item.body, item.headers as Record<string, string>) as PresenceEvent);
      expect(delivered.map((event) => [event.seq, event.data.state]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual(events.map((event) => [event.seq, event.data.state]));

      // Presence is played alone, by a member in a group, in a state the network knows; nothing is recorded for a refusal.
      expectFieldError(await play(alice, 'dancing'), 'presence');
      expectFieldError(await play(phone(), 'typing', { group: group.id }), 'from');
      expectFieldError(await play(alice, 'typing', { edit: { messageId: 'msg_x', content: 'y' } }), 'presence');
      expectError(await call(ctx, await createTenant(ctx), 'POST', '/sandbox/incoming', { deviceId: device.id, from: alice, content: '', presence: 'typing' }), 404, 'NOT_FOUND');
      expect(expectOk<{ data: PresenceEvent[] }>(await call(ctx, tenant, 'GET', '/events?type=chat.presence&limit=10')).data).toHaveLength(5);
    } finally {
      await hook.close();
    }
  });

  it('a message sent into a group chat reaches every member once', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const members = [phone(), phone(), phone()];
    const group = await createGroup(tenant, device.id, 'Team', members);
    await waitFor(async () => (await listChats(tenant, '?type=group')).data.length === 1, 5_000, 'the group chat listed from the network');

    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hello team', chatIds: [group.id] });
    expect(sent.message).toMatchObject({ to: group.id, chatId: group.id, status: 'SENT' });
    const network = await sandboxMessages(ctx, tenant);
    expect(network.data).toHaveLength(1);
    expect(network.data[0]).toMatchObject({ to: group.id, sendCalls: 1 });
    expect((network.data[0] as unknown as { groupMembers: string[] }).groupMembers.sort()).toEqual([...members].sort());
    for (const member of members) {
      const seen = await waitFor(async () => {
        const rows = (await sandboxMessages(ctx, tenant, { to: member })).data;
        return rows.length === 1 && rows[0]!.delivered === 1 ? rows : undefined;
      }, 5_000, `the group message delivered for ${member}`);
      expect(seen[0]!.delivered).toBe(1);
    }
    await waitFor(async () => (await getChat(tenant, group.id)).lastMessage?.id === sent.message.id, 5_000, 'the group chat shows the sent message');

    // A group chat the device is not in fails at once; a chat id of the wrong shape is a 400.
    const stranger = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'x', chatIds: ['120363000000000001@g.us'] });
    expect(stranger.message).toMatchObject({ status: 'FAILED', error: { code: 'NOT_A_GROUP_MEMBER' } });
    expectFieldError(await call(ctx, tenant, 'POST', '/messages/send', { type: 'TEXT', content: 'x', chatIds: ['12345'] }), 'chatIds[0]');
    // A group chat id among the phone numbers is told where it goes.
    const misplaced = expectFieldError(await call(ctx, tenant, 'POST', '/messages/send', { type: 'TEXT', content: 'x', recipients: [group.id] }), 'recipients[0]');
    expect(misplaced.message).toBe('is a group chat id, not a phone number: send into a group with chatIds');
  });

  it("quotes and reacts to a member's message in the group chat, and a member quotes ours there; the member's direct chat is refused", async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const [alice, bob] = [phone(), phone()];
    const group = await createGroup(tenant, device.id, 'Club', [alice, bob]);
    await incoming(tenant, device.id, alice, 'who brings the ball?', { group: group.id });
    const theirs = await waitFor(async () => {
      const last = (await getChat(tenant, group.id)).lastMessage;
      return last?.content === 'who brings the ball?' ? last : undefined;
    }, 15_000, "alice's message in the group chat");
    expect(theirs).toMatchObject({ from: alice, chatId: group.id, direction: 'in' });
    const [theirsOnNetwork] = await ctx.database.query<{ network_message_id: string }>('SELECT network_message_id FROM messages WHERE id = $1', [theirs.id]);

    // Into the group chat: the reply and the reaction reach the network pointing at alice's message.
    const reply = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'I do', chatIds: [group.id], replyTo: theirs.id });
    expect(reply.message).toMatchObject({ to: group.id, chatId: group.id, replyTo: theirs.id, status: 'SENT' });
    const reaction = await sendDirect(ctx, tenant, { type: 'REACTION', reaction: { messageId: theirs.id, emoji: '⚽' }, chatIds: [group.id] });
    expect(reaction.message).toMatchObject({ to: group.id, status: 'SENT' });
    const onNetwork = (await sandboxMessages(ctx, tenant)).data.filter((m) => m.to === group.id);
    expect(onNetwork.map((m) => m.payload)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ replyTo: theirsOnNetwork!.network_message_id }),
        expect.objectContaining({ reaction: { networkMessageId: theirsOnNetwork!.network_message_id, emoji: '⚽' } }),
      ]),
    );

    // A member's message is not in their direct chat, and a direct message is not in the group.
    expectFieldError(await call(ctx, tenant, 'POST', '/messages/send', { type: 'TEXT', content: 'x', to: alice, replyTo: theirs.id }), 'replyTo');
    await incoming(tenant, device.id, alice, 'just us', {});
    const direct = await waitFor(async () => {
      const last = (await listChats(tenant)).data.find((c) => c.id === alice)?.lastMessage;
      return last?.content === 'just us' ? last : undefined;
    }, 15_000, "alice's direct message");
    expectFieldError(await call(ctx, tenant, 'POST', '/messages/send', { type: 'TEXT', content: 'x', chatIds: [group.id], replyTo: direct.id }), 'replyTo');

    // Bob quotes our reply in the group chat: Waygate links his message to it.
    await incoming(tenant, device.id, bob, 'thanks!', { group: group.id, replyTo: reply.message.id });
    const bobs = await waitFor(async () => {
      const last = (await getChat(tenant, group.id)).lastMessage;
      return last?.content === 'thanks!' ? last : undefined;
    }, 15_000, "bob's reply in the group chat");
    expect(bobs).toMatchObject({ from: bob, chatId: group.id, replyTo: reply.message.id });
    // Quoting the group's message in bob's direct chat is refused, as on the network.
    expectFieldError(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId: device.id, from: bob, content: 'x', replyTo: reply.message.id }), 'replyTo');
  });
});

describe("a chat's history", () => {
  it('pages back through 10,000 messages without gaps or repeats', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const peer = phone();
    await incoming(tenant, device.id, peer, 'first');
    await waitFor(async () => (await listChats(tenant)).data.length === 1, 5_000, 'the chat');
    // 9,999 more, both directions, many sharing a millisecond (the id breaks ties), plus traffic of another chat between them.
    await ctx.database.query(
      `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, created_at)
       SELECT 'msg_hist' || lpad(g::text, 6, '0') || substr(md5(random()::text), 1, 6), $1, $2, CASE WHEN g % 3 = 0 THEN 'out' ELSE 'in' END,
              CASE WHEN g % 10 = 0 THEN $4 ELSE $3 END, 'TEXT', 'm' || g, 'SENT', 'NID' || g, now() - interval '1 day' + (g / 4) * interval '1 millisecond'
         FROM generate_series(1, 11110) AS g`,
      [tenant.accountId, device.id, peer, phone()],
    );
    const [{ n }] = await ctx.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM messages WHERE device_id = $1 AND peer = $2',
      [device.id, peer],
    ) as [{ n: number }];
    expect(n).toBe(10_000);

    const seen = new Set<string>();
    let before: string | null = null;
    let previous: { createdAt: string; id: string } | undefined;
    let pages = 0;
    do {
      const query: string = `?limit=100${before ? `&before=${before}` : ''}`;
      const page: History = expectOk<History>(await call(ctx, tenant, 'GET', `/chats/${peer}/messages${query}`));
      for (const message of page.data) {
        expect(seen.has(message.id), `repeated ${message.id}`).toBe(false);
        seen.add(message.id);
        expect(message.chatId).toBe(peer);
        if (previous) expect([message.createdAt, message.id] < [previous.createdAt, previous.id] || message.createdAt < previous.createdAt || (message.createdAt === previous.createdAt && message.id < previous.id)).toBe(true);
        previous = { createdAt: message.createdAt, id: message.id };
      }
      before = page.meta.nextBefore;
      pages++;
    } while (before !== null && pages < 200);
    expect(seen.size).toBe(10_000);
    expect(pages).toBe(100);
    expect([...seen].at(-1)).toMatch(/^msg_hist00000/);

    expectFieldError(await call(ctx, tenant, 'GET', `/chats/${peer}/messages?before=msg_nope`), 'before');
  }, 180_000);
});

interface ParticipantsChange {
  chat: ChatDetailJson;
  results: { phoneNumber: string; ok: boolean; reason: string | null }[];
}

describe('WhatsApp groups the device administers', () => {
  it('creates a group, renames it, adds, promotes, demotes and removes members with an answer per number, gives and revokes its invite link, and leaves it', async () => {
    const tenant = await createTenant(ctx);
    expectError(await call(ctx, tenant, 'POST', '/chats', { name: 'Team', participants: [phone()] }), 409, 'NO_CONNECTED_DEVICE');
    const device = await linkDevice(ctx, tenant);
    const [alice, bob, carol] = [phone(), phone(), phone()];
    const off = phone('0000');

    // Created with the device's number as its admin; numbers not on the network are left out, a repeated one counts once.
    const created = expectOk<DataBody<ChatDetailJson>>(await call(ctx, tenant, 'POST', '/chats', { name: '  Team  ', participants: [alice, `+${bob}`, alice, off] }), 201).data;
    expect(created).toMatchObject({ type: 'group', deviceId: device.id, name: 'Team', participantsCount: 3, unreadCount: 0 });
    expect(created.id).toMatch(/^\d+@g\.us$/);
    expect(created.participants).toEqual([
      { phoneNumber: device.phoneNumber, lid: null, admin: true },
      { phoneNumber: alice, lid: null, admin: false },
      { phoneNumber: bob, lid: null, admin: false },
    ]);
    expect((await listChats(tenant, '?type=group')).data.map((c) => c.id)).toEqual([created.id]);
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'welcome', chatIds: [created.id] });
    expect(sent.message).toMatchObject({ to: created.id, status: 'SENT' });
    const [received] = (await sandboxMessages(ctx, tenant)).data;
    expect((received as unknown as { groupMembers: string[] }).groupMembers.sort()).toEqual([alice, bob].sort());

    const renamed = expectOk<DataBody<ChatDetailJson>>(await call(ctx, tenant, 'PATCH', `/chats/${created.id}`, { name: 'Team 2' })).data;
    expect(renamed.name).toBe('Team 2');
    expect((await getChat(tenant, created.id)).name).toBe('Team 2');

    const participants = async (action: string, phoneNumbers: string[]): Promise<ParticipantsChange> =>
      expectOk<DataBody<ParticipantsChange>>(await call(ctx, tenant, 'POST', `/chats/${created.id}/participants`, { action, phoneNumbers })).data;
    const added = await participants('add', [carol, alice, off]);
    expect(added.results).toEqual([
      { phoneNumber: carol, ok: true, reason: null },
      { phoneNumber: alice, ok: false, reason: 'is already a participant' },
      { phoneNumber: off, ok: false, reason: 'is not on the network' },
    ]);
    expect(added.chat.participants!.map((p) => p.phoneNumber)).toEqual([device.phoneNumber, alice, bob, carol]);
    expect(added.chat.participantsCount).toBe(4);
    const promoted = await participants('promote', [carol]);
    expect(promoted.chat.participants!.find((p) => p.phoneNumber === carol)!.admin).toBe(true);
    expect((await participants('promote', [carol])).results[0]).toEqual({ phoneNumber: carol, ok: false, reason: 'is already an admin' });
    const demoted = await participants('demote', [carol, device.phoneNumber!]);
    expect(demoted.results.map((r) => r.ok)).toEqual([true, false]);
    expect(demoted.chat.participants!.find((p) => p.phoneNumber === carol)!.admin).toBe(false);
    const removed = await participants('remove', [bob, device.phoneNumber!]);
    expect(removed.results[0]).toEqual({ phoneNumber: bob, ok: true, reason: null });
    expect(removed.results[1]!.reason).toMatch(/leave the group instead/);
    expect(removed.chat.participants!.map((p) => p.phoneNumber)).toEqual([device.phoneNumber, alice, carol]);

    const invite = expectOk<DataBody<{ chatId: string; deviceId: string; code: string; link: string }>>(await call(ctx, tenant, 'GET', `/chats/${created.id}/invite`)).data;
    expect(invite).toMatchObject({ chatId: created.id, deviceId: device.id, link: `https://chat.whatsapp.com/${invite.code}` });
    expect(invite.code).toMatch(/^[\w-]{22}$/);
    expect(expectOk<DataBody<{ code: string }>>(await call(ctx, tenant, 'GET', `/chats/${created.id}/invite`)).data.code).toBe(invite.code);
    const revoked = expectOk<DataBody<{ code: string; link: string }>>(await call(ctx, tenant, 'POST', `/chats/${created.id}/invite/revoke`)).data;
    expect(revoked.code).toMatch(/^[\w-]{22}$/);
    expect(revoked.code).not.toBe(invite.code);
    expect(revoked.link).toBe(`https://chat.whatsapp.com/${revoked.code}`);
    expect(expectOk<DataBody<{ code: string }>>(await call(ctx, tenant, 'GET', `/chats/${created.id}/invite`)).data.code).toBe(revoked.code);

    // Left: the chat and its history stay, the device is no longer a participant, and the group takes no more messages.
    const left = expectOk<DataBody<ChatDetailJson>>(await call(ctx, tenant, 'POST', `/chats/${created.id}/leave`)).data;
    expect(left.participants!.map((p) => p.phoneNumber)).toEqual([alice, carol]);
    expect(left.lastMessage?.id).toBe(sent.message.id);
    const after = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'still there?', chatIds: [created.id] });
    expect(after.message).toMatchObject({ status: 'FAILED', error: { code: 'NOT_A_GROUP_MEMBER' } });
    expect(expectError(await call(ctx, tenant, 'POST', `/chats/${created.id}/leave`), 409, 'CONFLICT').error.message).toBe('The device is not in this group any more');
    expectError(await call(ctx, tenant, 'PATCH', `/chats/${created.id}`, { name: 'x' }), 409, 'CONFLICT');
  }, 60_000);

  it("refuses what is not a group of the account's devices, what only an admin may do, and bad names and numbers", async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const peer = phone();
    await incoming(tenant, device.id, peer, 'hi');
    await waitFor(async () => (await listChats(tenant)).data.length === 1, 5_000, 'the direct chat');
    expectFieldError(await call(ctx, tenant, 'PATCH', `/chats/${peer}`, { name: 'x' }), 'chatId');
    expectFieldError(await call(ctx, tenant, 'GET', `/chats/${peer}/invite`), 'chatId');
    expectError(await call(ctx, tenant, 'POST', '/chats/120363000000000009@g.us/leave'), 404, 'NOT_FOUND');

    const group = expectOk<DataBody<ChatDetailJson>>(await call(ctx, tenant, 'POST', '/chats', { name: 'Club', participants: [phone()] }), 201).data;
    const stranger = await createTenant(ctx);
    await linkDevice(ctx, stranger);
    expectError(await call(ctx, stranger, 'GET', `/chats/${group.id}/invite`), 404, 'NOT_FOUND');
    expectError(await call(ctx, stranger, 'POST', `/chats/${group.id}/participants`, { action: 'add', phoneNumbers: [phone()] }), 404, 'NOT_FOUND');

    // A group the device is in but does not administer (the phone of another member created it).
    const theirs = await createGroup(tenant, device.id, 'Theirs', [phone()]);
    await waitFor(async () => (await listChats(tenant, '?type=group')).data.some((c) => c.id === theirs.id), 5_000, 'the group chat listed');
    await ctx.database.query("UPDATE chats SET participants = jsonb_set(participants, '{0,admin}', 'false') WHERE id = $1", [theirs.id]);
    const notAdmin = expectError(await call(ctx, tenant, 'PATCH', `/chats/${theirs.id}`, { name: 'Mine now' }), 409, 'CONFLICT');
    expect(notAdmin.error.message).toBe('Only a group admin can rename it, and the device is not one');

    expectFieldError(await call(ctx, tenant, 'POST', '/chats', { name: '   ', participants: [phone()] }), 'name');
    expectFieldError(await call(ctx, tenant, 'POST', '/chats', { name: 'x'.repeat(101), participants: [phone()] }), 'name');
    expectFieldError(await call(ctx, tenant, 'POST', '/chats', { name: 'Club', participants: [] }), 'participants');
    expectFieldError(await call(ctx, tenant, 'POST', '/chats', { name: 'Club', participants: ['12'] }), 'participants[0]');
    expectFieldError(await call(ctx, tenant, 'POST', `/chats/${group.id}/participants`, { action: 'kick', phoneNumbers: [phone()] }), 'action');
    const tooMany = Array.from({ length: 51 }, () => phone());
    expectFieldError(await call(ctx, tenant, 'POST', `/chats/${group.id}/participants`, { action: 'add', phoneNumbers: tooMany }), 'phoneNumbers');
    expectError(await call(ctx, tenant, 'POST', '/chats', { name: 'Club', participants: [phone()], deviceId: 'dev_nope' }), 404, 'NOT_FOUND');
  }, 60_000);
});

describe('number checks', () => {
  it('answers onNetwork per number from the network, caches it, and refuses a 51st number', async () => {
    const tenant = await createTenant(ctx);
    const none = await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: [phone()] });
    expectError(none, 409, 'NO_CONNECTED_DEVICE');
    await linkDevice(ctx, tenant);
    const on = phone();
    const off = phone('0000');
    const body = expectOk<DataBody<{ phoneNumber: string; onNetwork: boolean; chatId: string | null }[]>>(
      await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: [`+${on}`, off, on] }),
    );
    expect(body.data).toEqual([
      { phoneNumber: on, onNetwork: true, chatId: on },
      { phoneNumber: off, onNetwork: false, chatId: null },
      { phoneNumber: on, onNetwork: true, chatId: on },
    ]);
    const [cached] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM number_checks WHERE phone_number = ANY($1::text[])', [[on, off]]);
    expect(cached!.n).toBe(2);
    const again = expectOk<DataBody<{ onNetwork: boolean }[]>>(await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: [off] }));
    expect(again.data[0]!.onNetwork).toBe(false);

    const fifty = Array.from({ length: 50 }, () => phone());
    expect(expectOk<DataBody<unknown[]>>(await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: fifty })).data).toHaveLength(50);
    expectFieldError(await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: [...fifty, phone()] }), 'phoneNumbers');
    expectFieldError(await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: ['12'] }), 'phoneNumbers[0]');
    expectError(await call(ctx, tenant, 'POST', '/numbers/check', { phoneNumbers: [on], deviceId: 'dev_nope' }), 404, 'NOT_FOUND');
  });
});

describe('unhappy paths', () => {
  it("answers 404 for unknown chats and another account's, 400 for bad ids and a missing deviceId with two devices", async () => {
    const owner = await createTenant(ctx);
    const device = await linkDevice(ctx, owner);
    const peer = phone();
    await incoming(owner, device.id, peer, 'hi');
    await waitFor(async () => (await listChats(owner)).data.length === 1, 5_000, 'the chat');

    const other = await createTenant(ctx);
    await linkDevice(ctx, other);
    expectError(await call(ctx, other, 'GET', `/chats/${peer}`), 404, 'NOT_FOUND');
    expectError(await call(ctx, other, 'GET', `/chats/${peer}?deviceId=${device.id}`), 404, 'NOT_FOUND');
    expectError(await call(ctx, other, 'GET', `/chats/${peer}/messages`), 404, 'NOT_FOUND');
    expectError(await call(ctx, other, 'POST', `/chats/${peer}/read`), 404, 'NOT_FOUND');
    expect((await listChats(other)).data).toEqual([]);
    expectError(await call(ctx, owner, 'GET', `/chats/${phone()}`), 404, 'NOT_FOUND');
    expectFieldError(await call(ctx, owner, 'GET', '/chats/not-a-chat'), 'chatId');
    expectFieldError(await call(ctx, owner, 'POST', `/chats/${peer}/presence`, { state: 'dancing' }), 'state');
    expectFieldError(await call(ctx, owner, 'GET', '/chats?cursor=bogus'), 'cursor');

    await linkDevice(ctx, owner, { name: 'second' });
    expectFieldError(await call(ctx, owner, 'GET', `/chats/${peer}`), 'deviceId');
    expect((await getChat(owner, peer, `?deviceId=${device.id}`)).id).toBe(peer);
  });
});
