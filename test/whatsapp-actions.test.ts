/**
 * Edits, deletes for everyone, read receipts and poll votes on WhatsApp, through a fake of
 * Baileys' socket (test/whatsapp/fake-socket.ts): what Baileys is handed (`{ text, edit: key }`,
 * `{ delete: key }`, readMessages([key]), a poll with the message secret Waygate stored), and
 * what it reports in the shapes of its proto types (WAProto: protocolMessage MESSAGE_EDIT = 14 and
 * REVOKE = 0, pollUpdateMessage with a vote encrypted as WhatsApp does, inverting Baileys'
 * decryptPollVote with Baileys' own crypto).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DeviceInfo, MessageRef } from '../src/network/network.js';
import { actionMessageId } from '../src/network/whatsapp/messages.js';
import { waitFor } from './messaging-helpers.js';
import { createHarness, encryptVote, eventsOf, insertDevice, whatsAppTestFile, type Harness } from './whatsapp/harness.js';
import type { FakeSocket } from './whatsapp/fake-socket.js';

const wa = whatsAppTestFile();

const ME = '6281234567001';
/** As FakeSocket.pairSuccess links it: the number's JID and the LID, without device suffixes. */
const ME_JID = `${ME}@s.whatsapp.net`;
const ME_LID = `99${ME}@lid`;
const TO = '6281200000009';
const JID = `${TO}@s.whatsapp.net`;

async function linked(): Promise<{ device: DeviceInfo; socket: FakeSocket; h: Harness }> {
  const h = await createHarness(wa.ctx, {});
  wa.track(h);
  const device = await insertDevice(wa.ctx, wa.tenant.accountId);
  await h.open(device);
  (await h.fake.waitForSockets(1)).pairSuccess(ME);
  h.fake.script = (socket) => socket.open();
  const socket = await h.fake.waitForSockets(2);
  await waitFor(() => eventsOf(h.events, 'connected').length === 1, 2_000, 'connected');
  return { device: { ...device, status: 'CONNECTED', phoneNumber: ME }, socket, h };
}

const session = (h: Harness, deviceId: string) => waitFor(() => h.network.sessionOf(deviceId), 2_000, 'session');

describe('edit, delete and read, as Baileys is handed them', () => {
  it('edit is { text, edit: key }, delete is { delete: key } (ids derived from the action), read is readMessages([key])', async () => {
    const { device, socket, h } = await linked();
    const s = await session(h, device.id);
    const ours: MessageRef = { networkMessageId: '3EB0OURS', fromMe: true, chat: TO, type: 'TEXT', content: 'old' };
    const theirs: MessageRef = { networkMessageId: 'THEIRS1', fromMe: false, chat: TO, type: 'TEXT', content: 'hi' };
    await expect(s.edit(ours, 'new text')).resolves.toEqual({ ok: true });
    await expect(s.revoke(ours)).resolves.toEqual({ ok: true });
    await expect(s.markRead(theirs)).resolves.toEqual({ ok: true });
    const key = { remoteJid: JID, fromMe: true, id: '3EB0OURS' };
    expect(socket.sent.map((m) => [m.jid, m.content, m.options.messageId])).toEqual([
      [JID, { text: 'new text', linkPreview: null, edit: key }, actionMessageId('edit', '3EB0OURS', 'new text')],
      [JID, { delete: key }, actionMessageId('delete', '3EB0OURS')],
    ]);
    expect(actionMessageId('edit', '3EB0OURS', 'new text')).toMatch(/^3EB0[0-9A-F]{18}$/);
    expect(socket.reads).toEqual([{ remoteJid: JID, fromMe: false, id: 'THEIRS1' }]);
  });

  it('a refused edit (error ack) is a failure for the action; a closed connection is transient', async () => {
    const { device, socket, h } = await linked();
    const s = await session(h, device.id);
    const ours: MessageRef = { networkMessageId: '3EB0X', fromMe: true, chat: TO, type: 'TEXT', content: 'x' };
    socket.ack = { kind: 'error-ack', error: '479' };
    await expect(s.edit(ours, 'y')).resolves.toMatchObject({ ok: false, permanent: true, code: 'MESSAGE_REJECTED' });
    socket.close(428, 'Connection Closed');
    await expect(s.revoke(ours)).resolves.toMatchObject({ ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED' });
    await expect(s.markRead(ours)).resolves.toMatchObject({ ok: false, permanent: false });
  });
});

describe('edits and deletes the network reports', () => {
  it('protocolMessage MESSAGE_EDIT and REVOKE, from the other party and from the own phone, become edited / deleted events', async () => {
    const { socket, h } = await linked();
    socket.incoming([
      // The other party edits their message (editedMessage as Baileys' generateWAMessageContent builds it).
      {
        key: { remoteJid: JID, fromMe: false, id: 'P1' },
        message: { protocolMessage: { key: { remoteJid: JID, fromMe: true, id: 'THEIRS1' }, type: 14, editedMessage: { extendedTextMessage: { text: 'meet at 6' } }, timestampMs: 1_700_000_060_000 } },
        messageTimestamp: 1_700_000_060,
      },
      // A caption edit, wrapped as a disappearing message.
      {
        key: { remoteJid: JID, fromMe: false, id: 'P2' },
        message: { ephemeralMessage: { message: { protocolMessage: { key: { id: 'THEIRS2' }, type: 14, editedMessage: { imageMessage: { caption: 'a dog' } } } } } },
        messageTimestamp: 1_700_000_061,
      },
      { key: { remoteJid: JID, fromMe: false, id: 'P3' }, message: { protocolMessage: { key: { remoteJid: JID, fromMe: true, id: 'THEIRS1' }, type: 0 } }, messageTimestamp: 1_700_000_070 },
      // The device's own phone deletes a message the device sent.
      { key: { remoteJid: JID, fromMe: true, id: 'P4' }, message: { protocolMessage: { key: { remoteJid: JID, fromMe: true, id: '3EB0OURS' }, type: 0 } }, messageTimestamp: 1_700_000_080 },
      // Other protocol messages are not changes.
      { key: { remoteJid: JID, fromMe: false, id: 'P5' }, message: { protocolMessage: { type: 3 } } },
    ]);
    await waitFor(() => eventsOf(h.events, 'deleted').length === 2, 2_000, 'two deletes');
    expect(eventsOf(h.events, 'edited')).toEqual([
      { type: 'edited', networkMessageId: 'THEIRS1', chat: TO, fromMe: false, content: 'meet at 6', at: new Date(1_700_000_060_000) },
      { type: 'edited', networkMessageId: 'THEIRS2', chat: TO, fromMe: false, content: 'a dog', at: new Date(1_700_000_061_000) },
    ]);
    expect(eventsOf(h.events, 'deleted')).toEqual([
      { type: 'deleted', networkMessageId: 'THEIRS1', chat: TO, fromMe: false, at: new Date(1_700_000_070_000) },
      { type: 'deleted', networkMessageId: '3EB0OURS', chat: TO, fromMe: true, at: new Date(1_700_000_080_000) },
    ]);
    expect(eventsOf(h.events, 'incoming')).toHaveLength(0);
  });
});

describe('poll votes', () => {
  it('a poll goes out with a stored secret; votes (by number or by LID) are decrypted with it, also after a restart', async () => {
    const { device, socket, h } = await linked();
    const s = await session(h, device.id);
    const poll = { to: TO, accountId: wa.tenant.accountId, networkMessageId: '3EB0POLL1', type: 'POLL' as const, content: 'Lunch?', kind: { poll: { options: ['Rice', 'Noodles', 'Soup'], multiple: true } } };
    await expect(s.send(poll)).resolves.toEqual({ ok: true });
    const [stored] = await wa.ctx.database.query<{ secret: Uint8Array; options: string[] }>('SELECT secret, options FROM whatsapp_polls WHERE device_id = $1 AND message_id = $2', [device.id, '3EB0POLL1']);
    expect(stored!.options).toEqual(['Rice', 'Noodles', 'Soup']);
    const sent = socket.sent[0]!.content as { poll: { messageSecret: Uint8Array } };
    expect(Buffer.from(sent.poll.messageSecret)).toEqual(Buffer.from(stored!.secret));
    // Handed over again (a resend after a crash): the same secret.
    await s.send(poll);
    expect(Buffer.from((socket.sent[1]!.content as { poll: { messageSecret: Uint8Array } }).poll.messageSecret)).toEqual(Buffer.from(stored!.secret));

    const pollKey = { remoteJid: JID, fromMe: true, id: '3EB0POLL1' };
    const secret = stored!.secret;
    socket.incoming([
      {
        key: { remoteJid: JID, fromMe: false, id: 'V1' },
        message: { pollUpdateMessage: { pollCreationMessageKey: pollKey, vote: await encryptVote(['Rice', 'Soup'], { pollCreatorJid: ME_JID, pollMsgId: '3EB0POLL1', pollEncKey: secret, voterJid: JID }), senderTimestampMs: 1_700_000_000_000 } },
        messageTimestamp: 1_700_000_000,
      },
      // A voter WhatsApp addresses by LID, whose phone encrypted for the LIDs of both sides.
      {
        key: { remoteJid: '555000111@lid', remoteJidAlt: '6281300000002@s.whatsapp.net', fromMe: false, id: 'V2' },
        message: { pollUpdateMessage: { pollCreationMessageKey: pollKey, vote: await encryptVote(['Noodles'], { pollCreatorJid: ME_LID, pollMsgId: '3EB0POLL1', pollEncKey: secret, voterJid: '555000111@lid' }) } },
        messageTimestamp: 1_700_000_001,
      },
      // Encrypted with another key: not readable, ignored.
      {
        key: { remoteJid: JID, fromMe: false, id: 'V3' },
        message: { pollUpdateMessage: { pollCreationMessageKey: pollKey, vote: await encryptVote(['Rice'], { pollCreatorJid: ME_JID, pollMsgId: '3EB0POLL1', pollEncKey: randomBytes(32), voterJid: JID }) } },
      },
      // A vote taken back: no options.
      {
        key: { remoteJid: JID, fromMe: false, id: 'V4' },
        message: { pollUpdateMessage: { pollCreationMessageKey: pollKey, vote: await encryptVote([], { pollCreatorJid: ME_JID, pollMsgId: '3EB0POLL1', pollEncKey: secret, voterJid: JID }) } },
        messageTimestamp: 1_700_000_003,
      },
    ]);
    await waitFor(() => eventsOf(h.events, 'poll-vote').length === 3, 2_000, 'three votes');
    expect(eventsOf(h.events, 'poll-vote')).toEqual([
      { type: 'poll-vote', pollNetworkMessageId: '3EB0POLL1', voter: TO, options: ['Rice', 'Soup'], at: new Date(1_700_000_000_000) },
      { type: 'poll-vote', pollNetworkMessageId: '3EB0POLL1', voter: '6281300000002', options: ['Noodles'], at: new Date(1_700_000_001_000) },
      { type: 'poll-vote', pollNetworkMessageId: '3EB0POLL1', voter: TO, options: [], at: new Date(1_700_000_003_000) },
    ]);
    expect(eventsOf(h.events, 'incoming')).toHaveLength(0);

    // Another session (a restart, or another worker) reads later votes with the stored secret.
    await wa.close(h);
    const next = await createHarness(wa.ctx, {});
    wa.track(next);
    next.fake.script = (x) => x.open();
    await next.open(device);
    const restored = await next.fake.waitForSockets(1);
    await waitFor(() => eventsOf(next.events, 'connected').length === 1, 2_000, 'connected again');
    restored.incoming([
      {
        key: { remoteJid: JID, fromMe: false, id: 'V5' },
        message: { pollUpdateMessage: { pollCreationMessageKey: pollKey, vote: await encryptVote(['Soup'], { pollCreatorJid: ME_JID, pollMsgId: '3EB0POLL1', pollEncKey: secret, voterJid: JID }) } },
        messageTimestamp: 1_700_000_010,
      },
    ]);
    await waitFor(() => eventsOf(next.events, 'poll-vote').length === 1, 2_000, 'the vote after the restart');
    expect(eventsOf(next.events, 'poll-vote')[0]).toMatchObject({ voter: TO, options: ['Soup'] });
  });
});
