/**
 * Conversations on NETWORK=whatsapp through the API, with Baileys' socket faked
 * (test/whatsapp/fake-socket.ts, payloads shaped as Baileys 7's types): the number's groups
 * (groupFetchAllParticipating, groups.update → groupMetadata) as group chats with participants,
 * group messages with the member as sender, LID-only senders whose chat becomes the number's once
 * WhatsApp tells it (lid-mapping.update), read receipts (readMessages), presence, onWhatsApp
 * look-ups with their cache, sending into a group chat, and a group admin's changes
 * (groupCreate, groupUpdateSubject, groupParticipantsUpdate, groupInviteCode, groupRevokeInvite,
 * groupLeave).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatDetailJson, ChatJson } from '../src/conversations/chat-record.js';
import type { WAGroupMetadata } from '../src/network/whatsapp/types.js';
import { json, type Tenant, type TestContext } from './helpers.js';
import { send, waitFor, type DeviceBody, type MessageBody } from './messaging-helpers.js';
import type { FakeBaileys, FakeSocket } from './whatsapp/fake-socket.js';
import { startWhatsAppHarness, type WhatsAppApp } from './whatsapp/harness.js';

let app: WhatsAppApp | undefined;
let ctx: TestContext;
let tenant: Tenant;
let fake: FakeBaileys;
let socket: FakeSocket;
let deviceId: string;

const ME = '6281377700001';
const GROUP = '120363025246125486@g.us';
const ENV = { NETWORK: 'whatsapp', BULK_DELAY_MS: '0-0', WHATSAPP_ACK_TIMEOUT_MS: '2000', NUMBER_CHECK_INTERVAL_MS: '0', WHATSAPP_WARMUP: 'off' };

/** As Baileys 7 reports a group: participants by LID with the number beside it (or by number only), admins marked. */
const groupMetadata = (subject: string): WAGroupMetadata => ({
  id: GROUP,
  subject,
  creation: 1_700_000_000,
  participants: [
    { id: `99${ME}@lid`, phoneNumber: `${ME}@s.whatsapp.net`, admin: 'superadmin' },
    { id: '5550011@lid', phoneNumber: '6281377700011@s.whatsapp.net', admin: null },
    { id: '6281377700012@s.whatsapp.net', admin: 'admin' },
    { id: '5550013@lid', admin: null },
  ],
});

async function api<T>(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<{ status: number; body: T }> {
  const raw = await ctx.app.inject({ method, url, headers: tenant.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: raw.statusCode, body: json<T>(raw) };
}

const chats = async (query = ''): Promise<ChatJson[]> => (await api<{ data: ChatJson[] }>('GET', `/chats${query}`)).body.data;
const chat = async (id: string): Promise<ChatDetailJson | undefined> => {
  const { status, body } = await api<{ data: ChatDetailJson }>('GET', `/chats/${encodeURIComponent(id)}`);
  return status === 200 ? body.data : undefined;
};

beforeAll(async () => {
  app = await startWhatsAppHarness(ENV, { supervisor: { numberCheckIntervalMs: 0 } });
  ({ ctx, tenant, fake } = app);

  const { status, body } = await api<{ data: DeviceBody }>('POST', '/devices', { name: 'shop phone' });
  expect(status).toBe(201);
  deviceId = body.data.id;
  const first = await fake.waitForSockets(1);
  fake.script = (s) => {
    s.groups.set(GROUP, groupMetadata('Shop team'));
    s.open();
  };
  first.pairSuccess(ME);
  socket = await fake.waitForSockets(2);
  await waitFor(async () => (await api<{ data: DeviceBody }>('GET', `/devices/${deviceId}`)).body.data.status === 'CONNECTED', 10_000, 'CONNECTED');
}, 180_000);

afterAll(async () => {
  await app?.close();
});

describe('WhatsApp conversations through the API', () => {
  it("lists the number's groups as group chats with their participants (numbers, or the LID while WhatsApp hides it)", async () => {
    const group = await waitFor(() => chat(GROUP), 5_000, 'the group chat');
    expect(socket.groupFetchCalls).toBe(1);
    expect(group).toMatchObject({ type: 'group', name: 'Shop team', participantsCount: 4, unreadCount: 0, lastMessage: null });
    expect(group.participants).toEqual([
      { phoneNumber: ME, lid: `99${ME}@lid`, admin: true },
      { phoneNumber: '6281377700011', lid: '5550011@lid', admin: false },
      { phoneNumber: '6281377700012', lid: null, admin: true },
      { phoneNumber: '5550013@lid', lid: '5550013@lid', admin: false },
    ]);
    // Baileys reads the session's cache when sending into the group.
    expect((await socket.cachedGroupMetadata!(GROUP))?.subject).toBe('Shop team');
  });

  it('a group message is in the group chat, from the member (by number when known)', async () => {
    socket.incoming([
      {
        key: { remoteJid: GROUP, id: 'GRP-IN-1', fromMe: false, participant: '5550011@lid', participantAlt: '6281377700011@s.whatsapp.net', addressingMode: 'lid' },
        message: { conversation: 'meeting at 10?' },
        messageTimestamp: Math.floor(Date.now() / 1000),
      },
    ]);
    const group = await waitFor(async () => {
      const c = await chat(GROUP);
      return c?.unreadCount === 1 ? c : undefined;
    }, 5_000, 'the group message');
    expect(group.lastMessage).toMatchObject({ content: 'meeting at 10?', from: '6281377700011', fromLid: '5550011@lid', chatId: GROUP, direction: 'in' });
  });

  it("a LID-only sender's chat becomes the number's once WhatsApp maps the LID, and group members show the number", async () => {
    socket.incoming([{ key: { remoteJid: '5550013@lid', id: 'LID-IN-1', fromMe: false, addressingMode: 'lid' }, message: { conversation: 'who am i' } }]);
    const hidden = await waitFor(() => chat('5550013@lid'), 5_000, 'the chat under the LID');
    expect(hidden).toMatchObject({ type: 'direct', phoneNumber: null, lid: '5550013@lid', unreadCount: 1 });

    socket.emit('lid-mapping.update', { lid: '5550013@lid', pn: '6281377700013@s.whatsapp.net' });
    const merged = await waitFor(() => chat('6281377700013'), 5_000, "the number's chat");
    expect(merged).toMatchObject({ phoneNumber: '6281377700013', lid: '5550013@lid', unreadCount: 1, lastMessage: { content: 'who am i', from: '6281377700013', fromLid: '5550013@lid' } });
    expect(await chat('5550013@lid')).toBeUndefined();
    const group = await chat(GROUP);
    expect(group!.participants![3]).toEqual({ phoneNumber: '6281377700013', lid: '5550013@lid', admin: false });
  });

  it('marking read sends read receipts (readMessages) with the keys Baileys expects; presence goes out as composing', async () => {
    const { status, body } = await api<{ data: ChatDetailJson }>('POST', `/chats/${encodeURIComponent(GROUP)}/read`);
    expect(status).toBe(200);
    expect(body.data.unreadCount).toBe(0);
    await waitFor(() => socket.reads.length > 0, 5_000, 'readMessages');
    expect(socket.reads).toEqual([{ remoteJid: GROUP, id: 'GRP-IN-1', fromMe: false, participant: '6281377700011@s.whatsapp.net' }]);

    expect((await api('POST', '/chats/6281377700013/presence', { state: 'typing' })).status).toBe(200);
    await waitFor(() => socket.presences.length >= 2, 5_000, 'presence');
    expect(socket.presences).toEqual([
      { type: 'subscribe', jid: '6281377700013@s.whatsapp.net' },
      { type: 'composing', jid: '6281377700013@s.whatsapp.net' },
    ]);
  });

  it("reading a person's chat subscribes to their presence; presence.update becomes chat.presence events (typing, recording, online, offline), by number when known", async () => {
    socket.presences.length = 0;
    expect((await api('POST', '/chats/6281377700013/read')).status).toBe(200);
    await waitFor(() => socket.presences.length >= 1, 5_000, 'presenceSubscribe');
    expect(socket.presences).toEqual([{ type: 'subscribe', jid: '6281377700013@s.whatsapp.net' }]);

    const lastSeen = Math.floor(Date.now() / 1000) - 60;
    socket.emit('presence.update', { id: '6281377700013@s.whatsapp.net', presences: { '6281377700013@s.whatsapp.net': { lastKnownPresence: 'composing' } } });
    socket.emit('presence.update', { id: '5550013@lid', presences: { '5550013@lid': { lastKnownPresence: 'recording' } } });
    socket.emit('presence.update', { id: GROUP, presences: { '5550011@lid': { lastKnownPresence: 'composing' } } });
    socket.emit('presence.update', { id: '6281377700013@s.whatsapp.net', presences: { '6281377700013@s.whatsapp.net': { lastKnownPresence: 'available' } } });
    socket.emit('presence.update', { id: '6281377700013@s.whatsapp.net', presences: { '6281377700013@s.whatsapp.net': { lastKnownPresence: 'unavailable', lastSeen } } });
    // The device's own number (another of its linked devices) and a LID WhatsApp never mapped.
    socket.emit('presence.update', { id: `${ME}@s.whatsapp.net`, presences: { [`${ME}@s.whatsapp.net`]: { lastKnownPresence: 'available' } } });
    socket.emit('presence.update', { id: '5550099@lid', presences: { '5550099@lid': { lastKnownPresence: 'composing' } } });

    type Presence = { data: { deviceId: string; chatId: string; from: string | null; fromLid: string | null; state: string; lastSeen: string | null } };
    const events = await waitFor(async () => {
      const page = (await api<{ data: Presence[] }>('GET', '/events?type=chat.presence&limit=20')).body.data;
      return page.length >= 6 ? page : undefined;
    }, 5_000, 'six chat.presence events');
    const known = { deviceId, chatId: '6281377700013', from: '6281377700013', fromLid: '5550013@lid' };
    expect(events.map((event) => event.data)).toEqual([
      { ...known, fromLid: null, state: 'typing', lastSeen: null, at: expect.any(String) },
      { ...known, state: 'recording', lastSeen: null, at: expect.any(String) },
      { deviceId, chatId: GROUP, from: '6281377700011', fromLid: '5550011@lid', state: 'typing', lastSeen: null, at: expect.any(String) },
      { ...known, fromLid: null, state: 'online', lastSeen: null, at: expect.any(String) },
      { ...known, fromLid: null, state: 'offline', lastSeen: new Date(lastSeen * 1000).toISOString(), at: expect.any(String) },
      { deviceId, chatId: '5550099@lid', from: null, fromLid: '5550099@lid', state: 'typing', lastSeen: null, at: expect.any(String) },
    ]);
  });

  it('checks numbers with onWhatsApp, once per number (cached), and sends into a group chat by its id', async () => {
    socket.notOnWhatsApp.add('6281377700099');
    const calls = socket.onWhatsAppCalls;
    const first = await api<{ data: { phoneNumber: string; onNetwork: boolean; chatId: string | null }[] }>('POST', '/numbers/check', {
      phoneNumbers: ['6281377700098', '+62 813-7770-0099'],
    });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      { phoneNumber: '6281377700098', onNetwork: true, chatId: '6281377700098' },
      { phoneNumber: '6281377700099', onNetwork: false, chatId: null },
    ]);
    expect(socket.onWhatsAppCalls).toBe(calls + 1);
    await api('POST', '/numbers/check', { phoneNumbers: ['6281377700099'] });
    expect(socket.onWhatsAppCalls).toBe(calls + 1);

    const response = await send(ctx, tenant, { type: 'TEXT', content: 'see you at 10', chatIds: [GROUP], deviceId });
    expect(response.statusCode, response.body).toBe(200);
    expect(json<{ message: MessageBody }>(response).message).toMatchObject({ to: GROUP, chatId: GROUP, status: 'SENT' });
    expect(socket.sent.at(-1)).toMatchObject({ jid: GROUP, content: { text: 'see you at 10' } });
    await waitFor(async () => (await chat(GROUP))?.lastMessage?.content === 'see you at 10', 5_000, 'the group chat shows the sent message');
  });

  it("quotes and reacts to a member's message in the group chat with the member as the key's participant", async () => {
    const [theirs] = await ctx.database.query<{ id: string }>("SELECT id FROM messages WHERE network_message_id = 'GRP-IN-1'");
    const reply = await send(ctx, tenant, { type: 'TEXT', content: 'yes, at 10', chatIds: [GROUP], replyTo: theirs!.id, deviceId });
    expect(reply.statusCode, reply.body).toBe(200);
    expect(json<{ message: MessageBody }>(reply).message).toMatchObject({ to: GROUP, replyTo: theirs!.id, status: 'SENT' });
    const key = { remoteJid: GROUP, fromMe: false, id: 'GRP-IN-1', participant: '6281377700011@s.whatsapp.net' };
    expect(socket.sent.at(-1)).toMatchObject({ jid: GROUP, content: { text: 'yes, at 10' }, options: { quoted: { key, message: { conversation: 'meeting at 10?' } } } });

    const reaction = await send(ctx, tenant, { type: 'REACTION', reaction: { messageId: theirs!.id, emoji: '👍' }, chatIds: [GROUP], deviceId });
    expect(reaction.statusCode, reaction.body).toBe(200);
    expect(socket.sent.at(-1)).toMatchObject({ jid: GROUP, content: { react: { text: '👍', key } } });
    // The member's direct chat is not where the message is.
    expect((await send(ctx, tenant, { type: 'TEXT', content: 'x', to: '6281377700011', replyTo: theirs!.id, deviceId })).statusCode).toBe(400);
  });

  it('a groups.update asks groupMetadata again and renames the chat', async () => {
    socket.groups.set(GROUP, groupMetadata('Shop team (new)'));
    socket.emit('groups.update', [{ id: GROUP, subject: 'Shop team (new)' }]);
    await waitFor(async () => (await chat(GROUP))?.name === 'Shop team (new)', 5_000, 'the renamed group');
    expect(socket.groupMetadataCalls).toBe(1);
    expect((await chats('?type=group')).map((c) => c.name)).toEqual(['Shop team (new)']);
  });
});

describe("a group admin's changes through the API", () => {
  const [ANA, BEN, CAT] = ['6281377700021', '6281377700022', '6281377700023'];
  type Change = { chat: ChatDetailJson; results: { phoneNumber: string; ok: boolean; reason: string | null }[] };

  it('creates a group with groupCreate, changes its participants with an answer per number, renames it, reads and revokes its invite code and leaves it', async () => {
    const created = await api<{ data: ChatDetailJson }>('POST', '/chats', { name: 'Market', participants: [ANA, `+${BEN}`], deviceId });
    expect(created.status).toBe(201);
    const group = created.body.data;
    expect(socket.groupCalls.at(-1)).toEqual({ call: 'groupCreate', jid: group.id, args: ['Market', [`${ANA}@s.whatsapp.net`, `${BEN}@s.whatsapp.net`]] });
    expect(group).toMatchObject({ type: 'group', name: 'Market', participantsCount: 3 });
    expect(group.participants!.map((p) => [p.phoneNumber, p.admin])).toEqual([[ME, true], [ANA, false], [BEN, false]]);

    // WhatsApp answers each number: CAT's privacy settings refuse being added (403).
    socket.participantStatus.set(`${CAT}@s.whatsapp.net`, '403');
    const added = await api<{ data: Change }>('POST', `/chats/${group.id}/participants?deviceId=${deviceId}`, { action: 'add', phoneNumbers: [CAT] });
    expect(added.status).toBe(200);
    expect(socket.groupCalls.at(-1)).toEqual({ call: 'groupParticipantsUpdate', jid: group.id, args: [[`${CAT}@s.whatsapp.net`], 'add'] });
    expect(added.body.data.results).toEqual([{ phoneNumber: CAT, ok: false, reason: "cannot be added by others (their privacy settings): send them the group's invite link" }]);
    const promoted = await api<{ data: Change }>('POST', `/chats/${group.id}/participants`, { action: 'promote', phoneNumbers: [ANA], deviceId });
    expect(promoted.body.data.results).toEqual([{ phoneNumber: ANA, ok: true, reason: null }]);
    // The chat is read back from WhatsApp (groupMetadata), not guessed.
    expect(promoted.body.data.chat.participants!.find((p) => p.phoneNumber === ANA)!.admin).toBe(true);

    const renamed = await api<{ data: ChatDetailJson }>('PATCH', `/chats/${group.id}?deviceId=${deviceId}`, { name: 'Market day' });
    expect(socket.groupCalls.at(-1)).toEqual({ call: 'groupUpdateSubject', jid: group.id, args: ['Market day'] });
    expect(renamed.body.data.name).toBe('Market day');

    const invite = await api<{ data: { code: string; link: string } }>('GET', `/chats/${group.id}/invite?deviceId=${deviceId}`);
    expect(socket.groupCalls.at(-1)!.call).toBe('groupInviteCode');
    expect(invite.body.data.link).toBe(`https://chat.whatsapp.com/${invite.body.data.code}`);
    const revoked = await api<{ data: { code: string; link: string } }>('POST', `/chats/${group.id}/invite/revoke?deviceId=${deviceId}`);
    expect(socket.groupCalls.at(-1)).toEqual({ call: 'groupRevokeInvite', jid: group.id, args: [] });
    expect(revoked.body.data.code).not.toBe(invite.body.data.code);
    expect(revoked.body.data.link).toBe(`https://chat.whatsapp.com/${revoked.body.data.code}`);

    const left = await api<{ data: ChatDetailJson }>('POST', `/chats/${group.id}/leave?deviceId=${deviceId}`);
    expect(left.status).toBe(200);
    expect(socket.groupCalls.at(-1)).toEqual({ call: 'groupLeave', jid: group.id, args: [] });
    expect(left.body.data.participants!.map((p) => p.phoneNumber)).toEqual([ANA, BEN]);
  });

  it("WhatsApp's refusal is a 409 that says why (the stored group had the device as an admin)", async () => {
    const group = (await api<{ data: ChatDetailJson }>('POST', '/chats', { name: 'Stall', participants: [ANA], deviceId })).body.data;
    // Another admin took the device's admin rights; the stored group does not know it yet.
    socket.groups.get(group.id)!.participants[0]!.admin = null;
    const refused = await api<{ success: false; error: { code: string; message: string } }>('PATCH', `/chats/${group.id}?deviceId=${deviceId}`, { name: 'Mine' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'CONFLICT', message: 'WhatsApp refused: the device is not an admin of this group' });
    expect(socket.groupCalls.at(-1)!.call).toBe('groupCreate');
  });
});
