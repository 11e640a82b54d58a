/**
 * The WhatsApp adapter's parts on their own: the auth state in the database (round trips of
 * Baileys' credentials and signal keys, deletes, fencing), the warm-up cap, the configuration,
 * and the pure mappings (disconnect reasons, ack errors, JIDs).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { DatabaseAuthStore } from '../src/network/whatsapp/auth-state.js';
import { isPersonJid, jidToPhone, maskPhone, normalizeLid } from '../src/network/whatsapp/jid.js';
import { classifyAckError, classifyDisconnect, classifySendError, defaultFileName, quotedMessage, receiptStatus } from '../src/network/whatsapp/messages.js';
import { WarmupPolicy } from '../src/network/whatsapp/warmup.js';
import { groupQueryError, participantOutcomes } from '../src/network/whatsapp/groups.js';
import { NetworkRefusal } from '../src/network/network.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { insertDevice, realHelpers } from './whatsapp/harness.js';

let ctx: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ctx = await createTestApp({ NETWORK: 'whatsapp' });
  tenant = await createTenant(ctx);
});
afterAll(async () => {
  await ctx?.close();
});

describe('auth state in the database', () => {
  it('round-trips credentials (buffers, nested key pairs) and signal keys of every kind', async () => {
    const device = await insertDevice(ctx, tenant.accountId);
    const helpers = await realHelpers();
    const store = new DatabaseAuthStore(ctx.database, device.id, helpers);
    expect(await store.loadCreds()).toBeUndefined();

    const creds = store.fresh();
    Object.assign(creds, { me: { id: '6281234567001:4@s.whatsapp.net', name: 'Shop' }, account: { details: Buffer.from([1, 2, 3]), accountSignature: Buffer.alloc(64, 7) } });
    await store.saveCreds(creds);
    const loaded = await new DatabaseAuthStore(ctx.database, device.id, helpers).loadCreds();
    expect(loaded).toEqual(creds);
    expect(Buffer.isBuffer((loaded!.noiseKey as { private: Buffer }).private)).toBe(true);

    const keys = store.state(creds).keys;
    const preKey = { public: Buffer.alloc(32, 1), private: Buffer.alloc(32, 2) };
    const session = Buffer.from('session-record');
    const syncKey = { keyData: Buffer.alloc(32, 9), fingerprint: { rawId: 5, currentIndex: 1, deviceIndexes: [0, 1] }, timestamp: 1_700_000_000 };
    await keys.set({
      'pre-key': { '1': preKey, '2': { public: Buffer.alloc(32, 3), private: Buffer.alloc(32, 4) } },
      session: { '6281234567002.0': session },
      'app-state-sync-key': { AAAA: syncKey },
      'sender-key-memory': { '1203@g.us': { '6281234567002:0@s.whatsapp.net': true } },
    });
    const other = new DatabaseAuthStore(ctx.database, device.id, helpers).state(creds).keys;
    expect(await other.get('pre-key', ['1', '3'])).toEqual({ '1': preKey });
    expect(await other.get('session', ['6281234567002.0'])).toEqual({ '6281234567002.0': session });
    const sync = (await other.get('app-state-sync-key', ['AAAA']))['AAAA'] as { keyData: Uint8Array; toJSON?: unknown };
    expect(Buffer.from(sync.keyData)).toEqual(syncKey.keyData);
    expect(typeof sync.toJSON).toBe('function'); // revived as the protobuf object Baileys expects
    expect(await other.get('sender-key-memory', ['1203@g.us'])).toEqual({ '1203@g.us': { '6281234567002:0@s.whatsapp.net': true } });

    // null deletes; a later write replaces.
    await keys.set({ 'pre-key': { '1': null, '2': preKey } });
    expect(await other.get('pre-key', ['1', '2'])).toEqual({ '2': preKey });

    // Other devices' keys are their own.
    const second = await insertDevice(ctx, tenant.accountId);
    expect(await new DatabaseAuthStore(ctx.database, second.id, helpers).state(creds).keys.get('pre-key', ['2'])).toEqual({});

    await store.clear();
    expect(await store.loadCreds()).toBeUndefined();
    expect(await other.get('session', ['6281234567002.0'])).toEqual({});
  });

  it('a fenced store (its session closed) no longer writes, so a worker that lost the lease cannot overwrite the new owner', async () => {
    const device = await insertDevice(ctx, tenant.accountId);
    const helpers = await realHelpers();
    const old = new DatabaseAuthStore(ctx.database, device.id, helpers);
    const creds = old.fresh();
    await old.saveCreds(creds);
    await old.fence();
    await old.saveCreds({ ...creds, registrationId: 1 });
    await old.setKeys({ session: { x: Buffer.from('stale') } });
    const current = new DatabaseAuthStore(ctx.database, device.id, helpers);
    expect((await current.loadCreds())!.registrationId).toBe(creds.registrationId);
    expect(await current.getKeys('session', ['x'])).toEqual({});
  });
});

describe('warm-up', () => {
  it('caps bulk messages per day from the first link, rises day by day, ends after the last day, and survives a takeover', async () => {
    const device = await insertDevice(ctx, tenant.accountId);
    let now = Date.now();
    const policy = new WarmupPolicy(ctx.database, device.id, [2, 5], () => now);
    await policy.load();
    expect(policy.allowance()).toBeNull(); // not linked yet
    await policy.linked('6281234567001');
    const [row] = await ctx.database.query<{ first_linked_at: Date }>('SELECT first_linked_at FROM whatsapp_devices WHERE device_id = $1', [device.id]);
    const first = row!.first_linked_at.getTime();
    now = first + 1_000;
    expect(policy.allowance()).toEqual({ remaining: 2, resumeAt: new Date(first + 86_400_000) });
    await policy.consumed(2);
    expect(policy.allowance()!.remaining).toBe(0);

    // Another worker takes the device over: the count carries on.
    const takeover = new WarmupPolicy(ctx.database, device.id, [2, 5], () => now);
    await takeover.load();
    expect(takeover.allowance()!.remaining).toBe(0);

    now = first + 86_400_000 + 1;
    expect(takeover.allowance()).toEqual({ remaining: 5, resumeAt: new Date(first + 2 * 86_400_000) });
    await takeover.consumed(1);
    expect(takeover.allowance()!.remaining).toBe(4);
    // Reconnecting as the same number keeps the warm-up.
    await takeover.linked('6281234567001');
    expect(takeover.allowance()!.remaining).toBe(4);
    now = first + 2 * 86_400_000 + 1;
    expect(takeover.allowance()).toBeNull();

    // Linked again as a different number: a new warm-up.
    await takeover.linked('6281234567999');
    const [again] = await ctx.database.query<{ first_linked_at: Date; warmup_sent: number }>('SELECT first_linked_at, warmup_sent FROM whatsapp_devices WHERE device_id = $1', [device.id]);
    expect(again!.warmup_sent).toBe(0);
    now = again!.first_linked_at.getTime() + 10;
    expect(takeover.allowance()!.remaining).toBe(2);
  });
});

describe('configuration', () => {
  it('paces bulk traffic on whatsapp by default (1500–4000 ms, not on sandbox) and warms up new numbers', () => {
    const whatsapp = loadConfig({ NETWORK: 'whatsapp' });
    expect(whatsapp.bulkDelayMs).toEqual({ min: 1500, max: 4000 });
    expect(whatsapp.whatsapp.warmupDailyCaps).toEqual([50, 100, 200, 400, 800]);
    expect(whatsapp.whatsapp.webSocketUrl).toBe('wss://web.whatsapp.com/ws/chat');
    expect(loadConfig({}).bulkDelayMs).toEqual({ min: 0, max: 0 });
    expect(loadConfig({ NETWORK: 'whatsapp', BULK_DELAY_MS: '3000-9000' }).bulkDelayMs).toEqual({ min: 3000, max: 9000 });
    expect(loadConfig({ NETWORK: 'whatsapp', WHATSAPP_WARMUP: '10, 20,40' }).whatsapp.warmupDailyCaps).toEqual([10, 20, 40]);
    expect(loadConfig({ NETWORK: 'whatsapp', WHATSAPP_WARMUP: 'off' }).whatsapp.warmupDailyCaps).toEqual([]);
  });

  it('refuses bad values naming the variable', () => {
    for (const [name, value] of [
      ['WHATSAPP_WARMUP', '10,x'],
      ['WHATSAPP_WARMUP', '-5'],
      ['WHATSAPP_ACK_TIMEOUT_MS', '5'],
      ['WHATSAPP_CONNECT_TIMEOUT_MS', 'soon'],
      ['WHATSAPP_LOG_LEVEL', 'loud'],
      ['WHATSAPP_WS_URL', 'http://example.com'],
    ] as const) {
      expect(() => loadConfig({ NETWORK: 'whatsapp', [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ NETWORK: 'whatsapp', [name]: value })).toThrow(name);
    }
  });
});

describe('mappings', () => {
  it('disconnect reasons', () => {
    const boom = (statusCode: number | undefined): Error => Object.assign(new Error('x'), { output: { statusCode } });
    expect(classifyDisconnect(boom(515))).toMatchObject({ restartNow: true, loggedOut: false });
    expect(classifyDisconnect(boom(401))).toMatchObject({ reason: 'logout', loggedOut: true });
    expect(classifyDisconnect(boom(440))).toMatchObject({ reason: 'replaced', loggedOut: false });
    for (const code of [402, 403, 406]) expect(classifyDisconnect(boom(code))).toMatchObject({ reason: 'error', stop: { code: 'ACCOUNT_REFUSED' } });
    expect(classifyDisconnect(boom(405))).toMatchObject({ reason: 'error', stop: { code: 'CLIENT_OUTDATED' }, outdated: true });
    for (const code of [408, 428, 503, undefined]) expect(classifyDisconnect(boom(code))).toMatchObject({ reason: 'network', restartNow: false, loggedOut: false });
    expect(classifyDisconnect(undefined).reason).toBe('network');
  });

  it('acks and send errors', () => {
    expect(receiptStatus(0)).toBeUndefined();
    expect(receiptStatus(1)).toBeUndefined();
    expect(receiptStatus(2)).toBeUndefined();
    expect(receiptStatus(3)).toBe('DELIVERED');
    expect(receiptStatus(4)).toBe('READ');
    expect(receiptStatus(5)).toBe('READ');
    expect(classifyAckError('429')).toMatchObject({ permanent: false, code: 'RATE_LIMITED', warning: { code: 'RATE_LIMITED' } });
    // 463: no privacy token towards a new contact; Baileys does not retry it, and neither does Waygate (ban pressure).
    expect(classifyAckError('463')).toMatchObject({ permanent: true, code: 'NEW_CONTACT_REFUSED', pauseBulk: true, warning: { code: 'NEW_CONTACT_REFUSED' } });
    expect(classifyAckError('479')).toMatchObject({ permanent: true, code: 'MESSAGE_REJECTED' });
    expect(classifyAckError('999')).toMatchObject({ permanent: false, code: 'NETWORK_ERROR' });
    expect(classifySendError(Object.assign(new Error('Connection Closed'), { output: { statusCode: 428 } }))).toMatchObject({ code: 'DEVICE_NOT_CONNECTED', permanent: false });
    expect(classifySendError(new Error('Media upload failed on all hosts'))).toMatchObject({ code: 'MEDIA_UPLOAD_FAILED', permanent: false });
    expect(classifySendError(Object.assign(new Error('not-acceptable'), { data: 406 }))).toMatchObject({ code: 'MEDIA_REJECTED', permanent: true });
    expect(defaultFileName('application/pdf')).toBe('document.pdf');
    expect(defaultFileName('application/octet-stream')).toBe('document.bin');
  });

  it('JIDs', () => {
    expect(jidToPhone('6281234567001@s.whatsapp.net')).toBe('6281234567001');
    expect(jidToPhone('6281234567001:12@s.whatsapp.net')).toBe('6281234567001');
    expect(jidToPhone('123@lid')).toBeUndefined();
    expect(jidToPhone('1203@g.us')).toBeUndefined();
    expect(normalizeLid('123:4@lid')).toBe('123@lid');
    expect(isPersonJid('123@lid')).toBe(true);
    expect(isPersonJid('status@broadcast')).toBe(false);
    expect(isPersonJid('1203@g.us')).toBe(false);
    expect(maskPhone('6281234567001')).toBe('…7001');
  });
});

describe("a member's message in a group chat, as Baileys quotes it", () => {
  it('names the member as contextInfo.participant, the quoted id as stanzaId, and no remoteJid (the reply goes to the same group)', async () => {
    const { generateWAMessageFromContent } = await import('baileys');
    const GROUP = '120363025246125486@g.us';
    const ref = { networkMessageId: 'GRP-IN-1', fromMe: false, chat: GROUP, participant: '6281377700011', type: 'TEXT' as const, content: 'meeting at 10?' };
    const quoted = quotedMessage(ref, GROUP);
    const built = generateWAMessageFromContent(GROUP, { extendedTextMessage: { text: 'yes, at 10' } }, { quoted: quoted as never, userJid: '6281377700001@s.whatsapp.net' });
    const context = built.message?.extendedTextMessage?.contextInfo;
    expect(context).toMatchObject({ participant: '6281377700011@s.whatsapp.net', stanzaId: 'GRP-IN-1', quotedMessage: { conversation: 'meeting at 10?' } });
    expect(context?.remoteJid ?? undefined).toBeUndefined();
    // A message of the device itself is quoted under the device's own number (Baileys' userJid).
    const own = generateWAMessageFromContent(GROUP, { extendedTextMessage: { text: 'again' } }, { quoted: quotedMessage({ ...ref, fromMe: true, participant: undefined }, GROUP) as never, userJid: '6281377700001@s.whatsapp.net' });
    expect(own.message?.extendedTextMessage?.contextInfo?.participant).toBe('6281377700001@s.whatsapp.net');
  });
});

describe("what WhatsApp answers a group admin's change", () => {
  const errorNode = (text: string, code: number): Error => Object.assign(new Error(text), { isBoom: true, data: code, output: { statusCode: 500 } });

  it("is a refusal when WhatsApp answered with an error node, and stays the error it was when the connection failed", () => {
    const notAdmin = groupQueryError(errorNode('not-authorized', 401));
    expect(notAdmin).toBeInstanceOf(NetworkRefusal);
    expect((notAdmin as Error).message).toBe('WhatsApp refused: the device is not an admin of this group');
    expect((groupQueryError(errorNode('bad-request', 400)) as Error).message).toBe('WhatsApp refused: bad-request (400)');
    const closed = Object.assign(new Error('Connection Closed'), { isBoom: true, output: { statusCode: 428 } });
    expect(groupQueryError(closed)).toBe(closed);
    const timedOut = errorNode('Timed Out', 408);
    expect(groupQueryError(timedOut)).toBe(timedOut);
    expect(groupQueryError(errorNode('internal', 500))).not.toBeInstanceOf(NetworkRefusal);
  });

  it('answers each number asked, matched by number, by a LID WhatsApp mapped, or by position', () => {
    const lids = new Map([['5550022@lid', '6281377700022']]);
    const outcomes = participantOutcomes(
      ['6281377700021', '6281377700022', '6281377700023'],
      [
        { status: '409', jid: '6281377700021@s.whatsapp.net' },
        { status: '200', jid: '5550022@lid' },
        { status: '408', jid: '6281377700023@s.whatsapp.net' },
      ],
      (lid) => lids.get(lid),
    );
    expect(outcomes).toEqual([
      { phoneNumber: '6281377700021', ok: false, reason: 'is already a participant' },
      { phoneNumber: '6281377700022', ok: true, reason: null },
      { phoneNumber: '6281377700023', ok: false, reason: 'left the group recently and cannot be added back yet' },
    ]);
    expect(participantOutcomes(['6281377700021'], [{ status: '200', jid: '777@lid' }], () => undefined)).toEqual([{ phoneNumber: '6281377700021', ok: true, reason: null }]);
    expect(participantOutcomes(['6281377700021', '6281377700022'], [{ status: '999' }], () => undefined)).toEqual([
      { phoneNumber: '6281377700021', ok: false, reason: 'WhatsApp did not answer for this number' },
      { phoneNumber: '6281377700022', ok: false, reason: 'WhatsApp did not answer for this number' },
    ]);
  });
});
