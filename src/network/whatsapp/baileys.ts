/**
 * Loads the `baileys` package (an optional dependency, imported only when NETWORK=whatsapp) and
 * builds real sockets from it. Everything else in this folder talks to the structural types in
 * types.ts, which is what lets the tests drive the adapter through a fake socket.
 */
import type { Logger } from 'pino';
import type { WhatsAppConfig } from '../../config.js';
import type { Database } from '../../db/client.js';
import type { BaileysHelpers, SocketFactory, WAMessageKey, WASocketLike } from './types.js';

/* The parts of the package this file reads, as the CommonJS module object. */
interface BaileysModule {
  default: (config: Record<string, unknown>) => unknown;
  initAuthCreds(): Record<string, unknown>;
  BufferJSON: BaileysHelpers['BufferJSON'];
  proto: { Message: { AppStateSyncKeyData: { fromObject(value: unknown): unknown } } };
  Browsers: { ubuntu(browser: string): [string, string, string] };
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
  // A CommonJS package: Node puts the module object under `default`; bundlers and test runners
  // may hand it over directly, with the named exports at the top.
  type Candidate = Partial<BaileysModule> & { makeWASocket?: BaileysModule['default'] };
  const top = imported as Candidate & { default?: Candidate };
  const module = [top.default, top].find((candidate): candidate is Candidate => typeof candidate?.initAuthCreds === 'function');
  const makeWASocket = [module?.makeWASocket, module?.default].find((candidate) => typeof candidate === 'function');
  if (!module || !makeWASocket) {
    throw new Error('The installed "baileys" package does not look like Baileys 6.x (makeWASocket or initAuthCreds missing)');
  }
  return { ...(module as BaileysModule), default: makeWASocket };
}

export function baileysHelpers(baileys: BaileysModule): BaileysHelpers {
  return {
    initAuthCreds: () => baileys.initAuthCreds(),
    BufferJSON: baileys.BufferJSON,
    appStateSyncKeyFromObject: (value) => baileys.proto.Message.AppStateSyncKeyData.fromObject(value),
  };
}

/**
 * Real sockets. `getMessage` lets Baileys answer a recipient's retry request (a phone that could
 * not decrypt a message asks for it again): text messages are read back from the database by
 * their network id; media ones cannot be rebuilt and are not resent that way.
 */
export function baileysSocketFactory(baileys: BaileysModule, config: WhatsAppConfig, database: Database): SocketFactory {
  return ({ deviceId, auth, logger }) =>
    baileys.default({
      auth,
      logger: logger as Logger,
      printQRInTerminal: false,
      // Pairing codes need a browser WhatsApp knows; the phone lists the device as "Chrome (Ubuntu)".
      browser: baileys.Browsers.ubuntu('Chrome'),
      waWebSocketUrl: config.webSocketUrl,
      connectTimeoutMs: config.connectTimeoutMs,
      defaultQueryTimeoutMs: config.connectTimeoutMs,
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldSyncHistoryMessage: () => false,
      generateHighQualityLinkPreview: false,
      emitOwnEvents: false,
      getMessage: async (key: WAMessageKey) => {
        if (!key.id) return undefined;
        const [row] = await database.query<{ type: string; content: string }>(
          `SELECT type, content FROM messages WHERE device_id = $1 AND network_message_id = $2 AND direction = 'out'`,
          [deviceId, key.id],
        );
        return row?.type === 'TEXT' ? { conversation: row.content } : undefined;
      },
    }) as WASocketLike;
}
