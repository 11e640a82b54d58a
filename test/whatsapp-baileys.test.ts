/**
 * The REAL Baileys socket (not the fake), against endpoints on 127.0.0.1 only:
 *
 * - a session can end its socket in every state (dialing, upgrade unanswered, open and silent,
 *   closed by the server, refused) without the process dying — run in a child process, since a
 *   crash must show as a dead process (test/whatsapp/end-socket-child.ts);
 * - a pairing-code request carries the companion platform id WhatsApp accepts ('1' for Chrome;
 *   Baileys 6.x sent the character code '49', which the server refuses), read from the frame the
 *   real socket writes before the noise handshake (unencrypted then);
 * - the version every real socket announces comes from the version source;
 * - the payload shapes the fake socket emits exist in Baileys 7's own types and source.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { baileysSocketFactory, loadBaileys } from '../src/network/whatsapp/baileys.js';
import type { AuthState, WASocketLike } from '../src/network/whatsapp/types.js';
import { upgradingServer, whatsappFrames } from './whatsapp/local-endpoints.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface BinaryNode {
  tag: string;
  attrs: Record<string, string>;
  content?: BinaryNode[] | Uint8Array | string;
}

function find(node: BinaryNode, tag: string): BinaryNode | undefined {
  if (node.tag === tag) return node;
  if (!Array.isArray(node.content)) return undefined;
  for (const child of node.content) {
    const found = find(child, tag);
    if (found) return found;
  }
  return undefined;
}

describe('the real Baileys socket', () => {
  it('is ended in every state without the process dying (child process: dialing, upgrading, open-silent, closed, refused)', async () => {
    const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
    const output = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(tsx, [path.join(root, 'test', 'whatsapp', 'end-socket-child.ts')], { cwd: root, timeout: 90_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end();
    });
    const lines = output.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.uncaught || line.unhandledRejection || line.error), output.stdout + output.stderr).toEqual([]);
    expect(lines.filter((line) => line.alive).map((line) => line.state)).toEqual(['dialing', 'upgrading', 'open-silent', 'closed', 'refused']);
    expect(lines.at(-1)).toEqual({ done: true });
    expect(output.code).toBe(0);
  }, 120_000);

  it('is made with the version, ignored jids and cached key store Waygate chose, and asks for a pairing code with the platform id WhatsApp accepts', async () => {
    const baileys = await loadBaileys();
    const server = await upgradingServer('silent');
    const config = loadConfig({ NETWORK: 'whatsapp', WHATSAPP_WS_URL: `ws://127.0.0.1:${server.port}/ws/chat`, WHATSAPP_CONNECT_TIMEOUT_MS: '5000' }).whatsapp;
    const creds = baileys.initAuthCreds() as AuthState['creds'];
    let reads = 0;
    const auth: AuthState = {
      creds,
      keys: {
        get: async (type, ids) => {
          if (type === 'session' && ids.includes('waygate-test.0')) reads++;
          return Object.fromEntries(ids.map((id) => [id, { public: Buffer.alloc(32, 1), private: Buffer.alloc(32, 2) }]));
        },
        set: async () => undefined,
      },
    };
    let socket: WASocketLike | undefined;
    const version: [number, number, number] = [2, 3000, 1023456789];
    try {
      // The real makeWASocket, watched: the configuration Waygate hands it.
      let handed: Record<string, unknown> | undefined;
      const watched = { ...baileys, makeWASocket: (options: Record<string, unknown>) => baileys.makeWASocket((handed = options)) };
      socket = baileysSocketFactory(watched, config)({
        deviceId: 'dev_pairing',
        auth,
        logger: pino({ level: 'silent' }),
        version,
        getMessage: async () => undefined,
      });
      expect(handed).toMatchObject({ version, browser: ['Ubuntu', 'Chrome', '22.04.4'], emitOwnEvents: false, syncFullHistory: false });
      expect((handed!.shouldIgnoreJid as (jid: string) => boolean)('status@broadcast')).toBe(true);
      expect((handed!.shouldIgnoreJid as (jid: string) => boolean)('120363025246125888@newsletter')).toBe(true);
      expect((handed!.shouldIgnoreJid as (jid: string) => boolean)('6281234567890@s.whatsapp.net')).toBe(false);
      // The key store is Baileys' cacheable one around the database store: a key read twice costs one database read.
      const cached = (handed!.auth as { keys: AuthState['keys'] }).keys;
      expect(cached).not.toBe(auth.keys);
      const before = reads;
      await cached.get('session', ['waygate-test.0']);
      await cached.get('session', ['waygate-test.0']);
      expect(reads - before).toBe(1);
      await server.upgraded;
      // The websocket is open on the client side once its first frame (the noise hello) arrived.
      const deadline = Date.now() + 5_000;
      while (server.payloads.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      const code = await socket.requestPairingCode('6281234567890');
      expect(code).toMatch(/^[A-Z0-9]{8}$/);
      const until = Date.now() + 5_000;
      let pairing: BinaryNode | undefined;
      while (!pairing && Date.now() < until) {
        for (const frame of whatsappFrames(server.payloads)) {
          const node = (await (baileys as unknown as { decodeBinaryNode(b: Buffer): Promise<BinaryNode> }).decodeBinaryNode(frame).catch(() => undefined)) as BinaryNode | undefined;
          const found = node && find(node, 'link_code_companion_reg');
          if (found) pairing = found;
        }
        if (!pairing) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(pairing, 'the pairing stanza the socket wrote').toBeDefined();
      expect(pairing!.attrs).toMatchObject({ jid: '6281234567890@s.whatsapp.net', stage: 'companion_hello' });
      const platformId = find(pairing!, 'companion_platform_id')!.content;
      // CompanionWebClientType.CHROME = 1 (WhatsApp Web's own value); "49" is the character code Baileys 6 sent.
      expect(Buffer.from(platformId as Uint8Array | string).toString()).toBe('1');
      expect(Buffer.from(find(pairing!, 'companion_platform_display')!.content as Uint8Array | string).toString()).toBe('Chrome (Ubuntu)');
    } finally {
      // The silent server would never answer the websocket's close: hang up first.
      server.close();
      if (socket) await Promise.resolve(socket.end(undefined)).catch(() => undefined);
    }
  }, 30_000);

  it('the fake socket\'s payloads exist in Baileys 7: lid-mapping.update {lid, pn}, remoteJidAlt / participantAlt, Contact.phoneNumber, getPNForLID, mediaUploadTimeoutMs, presence.update', async () => {
    const types = path.join(root, 'node_modules', 'baileys', 'lib');
    const events = await readFile(path.join(types, 'Types', 'Events.d.ts'), 'utf8');
    const auth = await readFile(path.join(types, 'Types', 'Auth.d.ts'), 'utf8');
    const message = await readFile(path.join(types, 'Types', 'Message.d.ts'), 'utf8');
    const contact = await readFile(path.join(types, 'Types', 'Contact.d.ts'), 'utf8');
    const lidMapping = await readFile(path.join(types, 'Signal', 'lid-mapping.d.ts'), 'utf8');
    expect(events).toContain("'lid-mapping.update': LIDMapping;");
    expect(events).toMatch(/'messaging-history\.set': \{[\s\S]*lidPnMappings\?: LIDMapping\[\];/);
    expect(auth).toMatch(/export type LIDMapping = \{\s*pn: string;\s*lid: string;\s*\};/);
    expect(message).toMatch(/export type WAMessageKey = proto\.IMessageKey & \{[\s\S]*remoteJidAlt\?: string;[\s\S]*participantAlt\?: string;/);
    expect(message).toContain('mediaUploadTimeoutMs?: number;');
    expect(contact).toMatch(/phoneNumber\?: string;/);
    expect(lidMapping).toContain('getPNForLID(lid: string): Promise<string | null>;');
    // presence.update, as the fake emits it and CONTACT_PRESENCE maps it (a chat's `paused` arrives as available).
    const chat = await readFile(path.join(types, 'Types', 'Chat.d.ts'), 'utf8');
    const chatsSource = await readFile(path.join(types, 'Socket', 'chats.js'), 'utf8');
    expect(events).toMatch(/'presence\.update': \{\s*id: string;\s*presences: \{\s*\[participant: string\]: PresenceData;/);
    expect(chat).toContain("export type WAPresence = 'unavailable' | 'available' | 'composing' | 'recording' | 'paused';");
    expect(chat).toMatch(/export interface PresenceData \{\s*lastKnownPresence: WAPresence;\s*lastSeen\?: number;/);
    expect(chatsSource).toMatch(/if \(type === 'paused'\) \{\s*type = 'available';/);
    // The chats.phoneNumberShare event of Baileys 6 is gone.
    expect(events).not.toContain('phoneNumberShare');
  });
});
