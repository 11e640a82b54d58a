/**
 * The added kinds of message on WhatsApp, through a fake of Baileys' socket
 * (test/whatsapp/fake-socket.ts): the exact content Baileys is handed for each kind (voice
 * notes, stickers, places, contact cards, polls, reactions), quotes and mentions; and each kind
 * Baileys reports, in the shapes of its proto types (WAProto/index.d.ts), parsed into Waygate's.
 */
import { describe, expect, it } from 'vitest';
import type { DeviceInfo, MessageRef, OutgoingMessage } from '../src/network/network.js';
import { vcardOf } from '../src/network/whatsapp/messages.js';
import { waitFor } from './messaging-helpers.js';
import { createHarness, eventsOf, insertDevice, whatsAppTestFile, type Harness } from './whatsapp/harness.js';
import type { FakeSocket } from './whatsapp/fake-socket.js';

const wa = whatsAppTestFile();

/** A device linked through the fake: QR shown, phone scans, restart, open. */
async function linked(): Promise<{ deviceId: string; socket: FakeSocket; device: DeviceInfo; h: Harness }> {
  const h = await createHarness(wa.ctx, {});
  wa.track(h);
  const device = await insertDevice(wa.ctx, wa.tenant.accountId);
  await h.open(device);
  const first = await h.fake.waitForSockets(1);
  first.pairSuccess('6281234567001');
  h.fake.script = (socket) => socket.open();
  const socket = await h.fake.waitForSockets(2);
  await waitFor(() => eventsOf(h.events, 'connected').length === 1, 2_000, 'connected');
  return { deviceId: device.id, socket, device, h };
}

const TO = '6281200000009';
const JID = `${TO}@s.whatsapp.net`;

describe('sending each kind', () => {
  it('hands Baileys the content of each kind: voice note, sticker, place, cards, poll, reaction', async () => {
    const { deviceId, socket } = await linked();
    const session = (await waitFor(() => wa.harnesses[0]!.network.sessionOf(deviceId), 2_000, 'session'))!;
    const audio = Buffer.from('OggS-audio');
    const webp = Buffer.from('RIFF0000WEBPVP8 ');
    const base = { to: TO, accountId: wa.tenant.accountId };
    const target: MessageRef = { networkMessageId: '3EB0TARGET', fromMe: false, chat: TO, type: 'TEXT', content: 'hi' };
    const messages: OutgoingMessage[] = [
      { ...base, networkMessageId: 'K1', type: 'AUDIO', content: '', media: { data: audio, mimeType: 'audio/ogg' }, kind: { voice: true } },
      { ...base, networkMessageId: 'K2', type: 'AUDIO', content: '', media: { data: audio, mimeType: 'audio/mpeg' } },
      { ...base, networkMessageId: 'K3', type: 'STICKER', content: '', media: { data: webp, mimeType: 'image/webp' } },
      { ...base, networkMessageId: 'K4', type: 'LOCATION', content: 'meet here', kind: { location: { latitude: -6.2, longitude: 106.8, name: 'Monas', address: 'Jakarta' } } },
      { ...base, networkMessageId: 'K5', type: 'CONTACT', content: '', kind: { contacts: [{ name: 'Ani; "A"', phoneNumber: '6281234500001' }] } },
      { ...base, networkMessageId: 'K6', type: 'CONTACT', content: '', kind: { contacts: [{ name: 'Ani', phoneNumber: '6281234500001' }, { name: 'Budi', phoneNumber: '6281234500002' }] } },
      { ...base, networkMessageId: 'K7', type: 'POLL', content: 'Lunch?', kind: { poll: { options: ['Rice', 'Noodles'], multiple: false } } },
      { ...base, networkMessageId: 'K8', type: 'POLL', content: 'Toppings?', kind: { poll: { options: ['Egg', 'Chili', 'Tofu'], multiple: true } } },
      { ...base, networkMessageId: 'K9', type: 'REACTION', content: '', reaction: { target, emoji: '👍' } },
      { ...base, networkMessageId: 'K10', type: 'REACTION', content: '', reaction: { target: { ...target, fromMe: true }, emoji: '' } },
    ];
    for (const message of messages) await expect(session.send(message)).resolves.toEqual({ ok: true });
    expect(socket.sent.map((s) => s.jid)).toEqual(messages.map(() => JID));
    expect(socket.sent.map((s) => s.options.quoted)).toEqual(messages.map(() => undefined));
    expect(socket.sent.map((s) => s.content)).toEqual([
      { audio, mimetype: 'audio/ogg', ptt: true },
      { audio, mimetype: 'audio/mpeg', ptt: false },
      { sticker: webp, mimetype: 'image/webp' },
      { location: { degreesLatitude: -6.2, degreesLongitude: 106.8, name: 'Monas', address: 'Jakarta', comment: 'meet here' } },
      { contacts: { displayName: 'Ani; "A"', contacts: [{ displayName: 'Ani; "A"', vcard: vcardOf({ name: 'Ani; "A"', phoneNumber: '6281234500001' }) }] } },
      {
        contacts: {
          displayName: '2 contacts',
          contacts: [
            { displayName: 'Ani', vcard: vcardOf({ name: 'Ani', phoneNumber: '6281234500001' }) },
            { displayName: 'Budi', vcard: vcardOf({ name: 'Budi', phoneNumber: '6281234500002' }) },
          ],
        },
      },
      // The poll's message secret is the one stored for its votes (test/whatsapp-actions.test.ts).
      { poll: { name: 'Lunch?', values: ['Rice', 'Noodles'], selectableCount: 1, messageSecret: expect.any(Uint8Array) as Uint8Array } },
      { poll: { name: 'Toppings?', values: ['Egg', 'Chili', 'Tofu'], selectableCount: 0, messageSecret: expect.any(Uint8Array) as Uint8Array } },
      { react: { text: '👍', key: { remoteJid: JID, fromMe: false, id: '3EB0TARGET' } } },
      { react: { text: '', key: { remoteJid: JID, fromMe: true, id: '3EB0TARGET' } } },
    ]);
  });

  it('builds vCards with the number as its WhatsApp id, the name escaped', () => {
    expect(vcardOf({ name: 'Ani; "A", B\\C', phoneNumber: '6281234500001' })).toBe(
      ['BEGIN:VCARD', 'VERSION:3.0', 'FN:Ani\\; "A"\\, B\\\\C', 'N:Ani\\; "A"\\, B\\\\C;;;;', 'TEL;type=CELL;type=VOICE;waid=6281234500001:+6281234500001', 'END:VCARD'].join('\n'),
    );
  });

  it('quotes the stored message (its key and content) and puts mentions in the content as JIDs', async () => {
    const { deviceId, socket } = await linked();
    const session = (await waitFor(() => wa.harnesses[0]!.network.sessionOf(deviceId), 2_000, 'session'))!;
    const base = { to: TO, accountId: wa.tenant.accountId };
    const quotes: MessageRef[] = [
      { networkMessageId: 'Q1', fromMe: false, chat: TO, type: 'TEXT', content: 'the question' },
      { networkMessageId: 'Q2', fromMe: true, chat: TO, type: 'IMAGE', content: 'a cat' },
      { networkMessageId: 'Q3', fromMe: true, chat: TO, type: 'POLL', content: 'Lunch?', kind: { poll: { options: ['Rice', 'Noodles'], multiple: false } } },
      { networkMessageId: 'Q4', fromMe: false, chat: TO, type: 'LOCATION', content: '', kind: { location: { latitude: 1.5, longitude: 2.5 } } },
      { networkMessageId: 'Q5', fromMe: false, chat: TO, type: 'AUDIO', content: '', kind: { voice: true } },
    ];
    for (const [index, replyTo] of quotes.entries()) {
      await session.send({ ...base, networkMessageId: `R${index}`, type: 'TEXT', content: 'the answer', replyTo, mentions: ['6281200000001', '6281200000002'] });
    }
    expect(socket.sent.map((s) => s.content)).toEqual(
      quotes.map(() => ({ text: 'the answer', linkPreview: null, mentions: ['6281200000001@s.whatsapp.net', '6281200000002@s.whatsapp.net'] })),
    );
    expect(socket.sent.map((s) => s.options.quoted)).toEqual([
      { key: { remoteJid: JID, fromMe: false, id: 'Q1' }, message: { conversation: 'the question' } },
      { key: { remoteJid: JID, fromMe: true, id: 'Q2' }, message: { imageMessage: { caption: 'a cat' } } },
      {
        key: { remoteJid: JID, fromMe: true, id: 'Q3' },
        message: { pollCreationMessageV3: { name: 'Lunch?', options: [{ optionName: 'Rice' }, { optionName: 'Noodles' }], selectableOptionsCount: 1 } },
      },
      { key: { remoteJid: JID, fromMe: false, id: 'Q4' }, message: { locationMessage: { degreesLatitude: 1.5, degreesLongitude: 2.5 } } },
      { key: { remoteJid: JID, fromMe: false, id: 'Q5' }, message: { audioMessage: { ptt: true } } },
    ]);
  });

  it('a kind without its fields is refused for good (MEDIA_MISSING), nothing reaches Baileys', async () => {
    const { deviceId, socket } = await linked();
    const session = (await waitFor(() => wa.harnesses[0]!.network.sessionOf(deviceId), 2_000, 'session'))!;
    const result = await session.send({ to: TO, accountId: wa.tenant.accountId, networkMessageId: 'X1', type: 'POLL', content: 'q' });
    expect(result).toMatchObject({ ok: false, permanent: true });
    expect(socket.sent).toHaveLength(0);
  });
});

describe('receiving each kind', () => {
  it('parses voice notes, stickers, places, cards, polls (V3 too), reactions, quotes and mentions', async () => {
    const { socket, h } = await linked();
    const jid = '6281311111111@s.whatsapp.net';
    const key = (id: string): { remoteJid: string; id: string; fromMe: boolean } => ({ remoteJid: jid, id, fromMe: false });
    const vcard = (name: string, digits: string): string => `BEGIN:VCARD\nVERSION:3.0\nFN:${name}\nTEL;type=CELL;type=VOICE;waid=${digits}:+${digits}\nEND:VCARD`;
    socket.incoming([
      { key: key('A1'), message: { audioMessage: { mimetype: 'audio/ogg; codecs=opus', seconds: 7, ptt: true, fileLength: 4000 } }, messageTimestamp: 1_700_000_000 },
      { key: key('A2'), message: { audioMessage: { mimetype: 'audio/mpeg', seconds: 180, ptt: false } } },
      { key: key('S1'), message: { stickerMessage: { mimetype: 'image/webp', fileLength: 9000 } } },
      { key: key('L1'), message: { locationMessage: { degreesLatitude: -6.2, degreesLongitude: 106.8, name: 'Monas', address: 'Jakarta', comment: 'here' } } },
      { key: key('C1'), message: { contactMessage: { displayName: 'Ani', vcard: vcard('Ani', '6281234500001') } } },
      {
        key: key('C2'),
        message: {
          contactsArrayMessage: {
            displayName: '2 contacts',
            contacts: [
              { displayName: 'Ani', vcard: vcard('Ani', '6281234500001') },
              { displayName: 'Budi', vcard: 'BEGIN:VCARD\nVERSION:3.0\nFN:Budi\nTEL;type=CELL:+62 812-3450-0002\nEND:VCARD' },
            ],
          },
        },
      },
      { key: key('P1'), message: { messageContextInfo: {}, pollCreationMessageV3: { name: 'Lunch?', options: [{ optionName: 'Rice' }, { optionName: 'Noodles' }], selectableOptionsCount: 1 } } },
      { key: key('P2'), message: { pollCreationMessage: { name: 'Toppings?', options: [{ optionName: 'Egg' }, { optionName: 'Chili' }], selectableOptionsCount: 0 } } },
      { key: key('R1'), message: { reactionMessage: { key: { remoteJid: jid, fromMe: true, id: '3EB0OURS' }, text: '❤️', senderTimestampMs: 1_700_000_000_000 } } },
      { key: key('R2'), message: { reactionMessage: { key: { remoteJid: jid, fromMe: true, id: '3EB0OURS' }, text: '' } } },
      {
        key: key('T1'),
        message: {
          extendedTextMessage: {
            text: 'yes @6281322222222',
            contextInfo: { stanzaId: '3EB0OURS', participant: '6281234567001@s.whatsapp.net', quotedMessage: { conversation: 'lunch?' }, mentionedJid: ['6281322222222@s.whatsapp.net', '999@lid'] },
          },
        },
      },
      { key: key('I1'), message: { imageMessage: { mimetype: 'image/jpeg', caption: 'this one', contextInfo: { stanzaId: 'IN-EARLIER', quotedMessage: { conversation: 'which?' } } } } },
    ]);
    await waitFor(() => eventsOf(h.events, 'incoming').length === 12, 2_000, 'twelve incoming');
    const incoming = eventsOf(h.events, 'incoming');
    expect(incoming.map((m) => [m.networkMessageId, m.messageType])).toEqual([
      ['A1', 'AUDIO'], ['A2', 'AUDIO'], ['S1', 'STICKER'], ['L1', 'LOCATION'], ['C1', 'CONTACT'], ['C2', 'CONTACT'],
      ['P1', 'POLL'], ['P2', 'POLL'], ['R1', 'REACTION'], ['R2', 'REACTION'], ['T1', 'TEXT'], ['I1', 'IMAGE'],
    ]);
    expect(incoming[0]).toMatchObject({ content: '', kind: { voice: true }, media: { mimeType: 'audio/ogg; codecs=opus', seconds: 7, sizeBytes: 4000 } });
    expect(incoming[1]!.kind).toBeUndefined();
    expect(incoming[2]).toMatchObject({ content: '', media: { mimeType: 'image/webp', sizeBytes: 9000 } });
    expect(incoming[3]).toMatchObject({ content: 'here', kind: { location: { latitude: -6.2, longitude: 106.8, name: 'Monas', address: 'Jakarta' } } });
    expect(incoming[4]!.kind).toEqual({ contacts: [{ name: 'Ani', phoneNumber: '6281234500001' }] });
    expect(incoming[5]!.kind).toEqual({ contacts: [{ name: 'Ani', phoneNumber: '6281234500001' }, { name: 'Budi', phoneNumber: '6281234500002' }] });
    expect(incoming[6]).toMatchObject({ content: 'Lunch?', kind: { poll: { options: ['Rice', 'Noodles'], multiple: false } } });
    expect(incoming[7]).toMatchObject({ content: 'Toppings?', kind: { poll: { options: ['Egg', 'Chili'], multiple: true } } });
    expect(incoming[8]).toMatchObject({ content: '', reaction: { networkMessageId: '3EB0OURS', emoji: '❤️' } });
    expect(incoming[9]).toMatchObject({ reaction: { networkMessageId: '3EB0OURS', emoji: '' } });
    expect(incoming[10]).toMatchObject({ content: 'yes @6281322222222', replyTo: '3EB0OURS', mentions: ['6281322222222', '999@lid'] });
    expect(incoming[11]).toMatchObject({ content: 'this one', replyTo: 'IN-EARLIER' });
    expect(incoming.slice(0, 10).every((m) => m.replyTo === undefined && m.mentions === undefined)).toBe(true);
  });
});
