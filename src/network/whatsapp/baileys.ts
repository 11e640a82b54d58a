/**
 * Loads the `baileys` package (an optional dependency, imported only when NETWORK=whatsapp) and
 * builds real sockets from it. Everything else in this folder talks to the structural types in
 * types.ts, which is what lets the tests drive the adapter through a fake socket.
 */
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { WhatsAppConfig } from '../../config.js';
import { isBroadcastJid } from './jid.js';
import type { BaileysHelpers, SocketFactory, WASocketLike } from './types.js';
import type { WaVersion } from './version.js';

/* The parts of the package this file reads (Baileys 7 is an ES module; these are its named exports). */
export interface BaileysModule {
  makeWASocket: (config: Record<string, unknown>) => unknown;
  initAuthCreds(): Record<string, unknown>;
  BufferJSON: BaileysHelpers['BufferJSON'];
  proto: {
    Message: {
      AppStateSyncKeyData: { fromObject(value: unknown): unknown };
      encode(message: unknown): { finish(): Uint8Array };
      decode(bytes: Uint8Array): unknown;
    };
  };
  Browsers: { ubuntu(browser: string): [string, string, string] };
  makeCacheableSignalKeyStore(store: unknown, logger?: unknown): unknown;
  DEFAULT_CONNECTION_CONFIG: { version: WaVersion };
  decryptPollVote: BaileysHelpers['decryptPollVote'];
  downloadMediaMessage(message: unknown, type: 'stream', options: { options?: { dispatcher?: unknown } }): Promise<Readable>;
}

export async function loadBaileys(): Promise<BaileysModule> {
  let imported: unknown;
  // A variable specifier: the package's own types are not needed (types.ts describes what is
  // used), so type-checking works without the optional dependency installed.
  const specifier = 'baileys';
  try {
    imported = (await import(specifier)) as unknown;
  } catch (error) {
    throw new Error(
      `NETWORK=whatsapp needs the optional dependency "baileys", which could not be loaded (${(error as Error).message}). ` +
        'Install it with `npm install` (optional dependencies included; not --omit=optional), or use NETWORK=sandbox.',
      { cause: error },
    );
  }
  const module = imported as Partial<BaileysModule>;
  const missing = (['makeWASocket', 'initAuthCreds', 'makeCacheableSignalKeyStore', 'DEFAULT_CONNECTION_CONFIG', 'decryptPollVote', 'downloadMediaMessage'] as const).filter((name) => !module[name]);
  if (missing.length > 0) {
    throw new Error(`The installed "baileys" package does not look like Baileys 7 (${missing.join(', ')} missing); run npm ci`);
  }
  return module as BaileysModule;
}

export function baileysHelpers(baileys: BaileysModule): BaileysHelpers {
  return {
    initAuthCreds: () => baileys.initAuthCreds(),
    BufferJSON: baileys.BufferJSON,
    appStateSyncKeyFromObject: (value) => baileys.proto.Message.AppStateSyncKeyData.fromObject(value),
    encodeMessage: (message) => Buffer.from(baileys.proto.Message.encode(message).finish()),
    decodeMessage: (bytes) => baileys.proto.Message.decode(bytes),
    decryptPollVote: (vote, context) => baileys.decryptPollVote(vote, context),
    // No reupload context: Baileys 7 asks for a re-upload only on errors with a `status` field,
    // which its own HTTP errors (Booms: output.statusCode) never have; the session does it.
    downloadMedia: (message, { dispatcher }) => baileys.downloadMediaMessage(message, 'stream', dispatcher ? { options: { dispatcher } } : {}),
  };
}

/** The browser the linked device presents: the phone lists it as "Chrome (Ubuntu)"; pairing codes need a browser WhatsApp knows. */
export function browserOf(baileys: BaileysModule): [string, string, string] {
  return baileys.Browsers.ubuntu('Chrome');
}

/**
 * Real sockets. The session hands in the version to announce and `getMessage`, with which Baileys
 * answers a recipient's retry request (a phone that could not decrypt a message asks for it
 * again) from the messages the session stored when it sent them.
 */
export function baileysSocketFactory(baileys: BaileysModule, config: WhatsAppConfig): SocketFactory {
  return ({ auth, logger, version, getMessage, agent, cachedGroupMetadata }) =>
    baileys.makeWASocket({
      ...(agent ? { agent, fetchAgent: agent } : {}),
      version,
      // Keys read through an in-memory cache (Baileys' own), so a message does not cost a database round trip per key.
      auth: { creds: auth.creds, keys: baileys.makeCacheableSignalKeyStore(auth.keys, logger) },
      logger: logger as Logger,
      browser: browserOf(baileys),
      waWebSocketUrl: config.webSocketUrl,
      connectTimeoutMs: config.connectTimeoutMs,
      defaultQueryTimeoutMs: config.connectTimeoutMs,
      markOnlineOnConnect: false,
      // Baileys' default history policy (everything but the FULL sync): the initial sync is where
      // Baileys 7 learns most LID ↔ number pairs (it warns that sessions are unstable without it).
      // The history's messages are not stored; its pairs are (messaging-history.set).
      syncFullHistory: false,
      // Status updates, broadcast lists and channels are not Waygate's traffic: not decrypted at all.
      shouldIgnoreJid: (jid: string) => isBroadcastJid(jid),
      generateHighQualityLinkPreview: false,
      emitOwnEvents: false,
      getMessage,
      ...(cachedGroupMetadata ? { cachedGroupMetadata } : {}),
    }) as WASocketLike;
}
