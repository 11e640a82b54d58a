/**
 * `waygate doctor whatsapp`: what a user runs on their own machine before linking a phone, to
 * see that (1) Baileys loads, (2) which WhatsApp Web version will be announced and where it came
 * from, (3) WhatsApp answers a new link with a QR code (which means the endpoint is reachable, the
 * noise handshake completes and the version is accepted; the code is not shown and the throwaway
 * credentials are dropped), and (4) the auth store round-trips credentials and signal keys
 * through the configured database (inside a transaction that is rolled back).
 */
import pino from 'pino';
import type { Config } from '../../config.js';
import type { Database, Queryable } from '../../platform/database.js';
import { DeviceStore } from '../../devices/device-store.js';
import { DatabaseAuthStore } from './auth-state.js';
import { baileysHelpers, baileysSocketFactory, loadBaileys, type BaileysModule } from './baileys.js';
import { classifyDisconnect, statusCodeOf } from './messages.js';
import type { AuthState, WAConnectionUpdate } from './types.js';
import { formatVersion, WaVersionSource, type ResolvedVersion } from './version.js';

export interface DoctorLine {
  ok: boolean | 'warn';
  check: string;
  detail: string;
}

class Rollback extends Error {}

/** Runs every check; `report` gets one line per check. Resolves true when none failed. */
export async function whatsappDoctor(config: Config, database: Database, report: (line: DoctorLine) => void): Promise<boolean> {
  let failed = false;
  const line = (ok: DoctorLine['ok'], check: string, detail: string): void => {
    if (ok === false) failed = true;
    report({ ok, check, detail });
  };

  let baileys: BaileysModule;
  try {
    baileys = await loadBaileys();
    line(true, 'baileys', `loaded (bundled web version ${formatVersion(baileys.DEFAULT_CONNECTION_CONFIG.version)})`);
  } catch (error) {
    line(false, 'baileys', (error as Error).message);
    return false;
  }

  const silent = pino({ level: 'silent' });
  const source = new WaVersionSource(config.whatsapp, baileys.DEFAULT_CONNECTION_CONFIG.version, silent);
  const resolved: ResolvedVersion = await source.refresh();
  if (resolved.source === 'configured') line(true, 'web version', `${formatVersion(resolved.version)} (WHATSAPP_WA_VERSION)`);
  else if (resolved.source === 'fetched') line(true, 'web version', `${formatVersion(resolved.version)} (read from ${config.whatsapp.webVersionUrl})`);
  else {
    line(
      'warn',
      'web version',
      `could not read it from ${config.whatsapp.webVersionUrl} (${resolved.error}); Baileys' bundled ${formatVersion(resolved.version)} would be used, which WhatsApp may refuse (405)`,
    );
  }

  const reach = await reachWhatsApp(baileys, config, resolved);
  line(reach.ok, 'connect', reach.detail);

  try {
    await roundTripAuth(baileys, database);
    line(true, 'auth store', 'credentials and signal keys round-trip through the database');
  } catch (error) {
    line(false, 'auth store', (error as Error).message);
  }
  return !failed;
}

/** A socket with throwaway credentials: a QR code means WhatsApp accepted the connection and the version. */
async function reachWhatsApp(baileys: BaileysModule, config: Config, resolved: ResolvedVersion): Promise<{ ok: boolean; detail: string }> {
  const creds = baileys.initAuthCreds() as AuthState['creds'];
  const keys: Record<string, Record<string, unknown>> = {};
  const auth: AuthState = {
    creds,
    keys: {
      get: async (type, ids) => Object.fromEntries(ids.filter((id) => keys[type]?.[id] !== undefined).map((id) => [id, keys[type]![id]])),
      set: async (data) => {
        for (const [type, entries] of Object.entries(data)) Object.assign((keys[type] ??= {}), entries);
      },
    },
  };
  const timeoutMs = config.whatsapp.connectTimeoutMs + 5_000;
  const socket = baileysSocketFactory(baileys, config.whatsapp)({
    deviceId: 'doctor',
    auth,
    logger: pino({ level: 'silent' }),
    version: resolved.version,
    getMessage: async () => undefined,
  });
  const endpoint = config.whatsapp.webSocketUrl;
  try {
    return await new Promise<{ ok: boolean; detail: string }>((resolve) => {
      const timer = setTimeout(() => resolve({ ok: false, detail: `no answer from ${endpoint} within ${timeoutMs} ms (firewall, proxy, or no network?)` }), timeoutMs);
      socket.ev.on('connection.update', (update: WAConnectionUpdate) => {
        if (update.qr) {
          clearTimeout(timer);
          resolve({ ok: true, detail: `${endpoint} answered a new link with a QR code: reachable, and version ${formatVersion(resolved.version)} is accepted` });
        } else if (update.connection === 'close') {
          clearTimeout(timer);
          const error = update.lastDisconnect?.error;
          const code = statusCodeOf(error);
          const decision = classifyDisconnect(error);
          resolve({ ok: false, detail: `${endpoint} closed the connection (${code ?? 'no status'}): ${decision.message}` });
        }
      });
    });
  } finally {
    try {
      void Promise.resolve(socket.end(undefined)).catch(() => undefined);
    } catch {
      // already closed
    }
  }
}

/** Saves and reads back credentials and a key of each kind Baileys stores, then rolls everything back. */
async function roundTripAuth(baileys: BaileysModule, database: Database): Promise<void> {
  const helpers = baileysHelpers(baileys);
  try {
    await database.transaction(async (tx: Queryable) => {
      const scoped = { query: tx.query.bind(tx), transaction: async <T>(work: (inner: Queryable) => Promise<T>): Promise<T> => work(tx) } as unknown as Database;
      // AccountService opens its own transaction (with a user and a password), which this rollback could not undo: a raw row.
      await tx.query(`INSERT INTO accounts (id, name, plan_id) VALUES ('acc_doctor', 'waygate doctor', (SELECT id FROM plans ORDER BY id LIMIT 1))`);
      await new DeviceStore(scoped).insert(tx, { id: 'dev_doctor', accountId: 'acc_doctor', name: 'doctor' });
      const store = new DatabaseAuthStore(scoped, 'dev_doctor', helpers);
      const creds = helpers.initAuthCreds() as AuthState['creds'];
      await store.saveCreds(creds);
      const keyPair = (creds as { signedIdentityKey: unknown }).signedIdentityKey;
      await store.setKeys({ 'pre-key': { '1': keyPair }, session: { 'x.0': Buffer.from('session') }, 'lid-mapping': { '6281234567890': '123456789' } });
      const back = await store.loadCreds();
      if (JSON.stringify(back, helpers.BufferJSON.replacer) !== JSON.stringify(creds, helpers.BufferJSON.replacer)) throw new Error('stored credentials read back different');
      const preKey = await store.getKeys('pre-key', ['1']);
      if (JSON.stringify(preKey['1'], helpers.BufferJSON.replacer) !== JSON.stringify(keyPair, helpers.BufferJSON.replacer)) throw new Error('a stored pre-key read back different');
      const session = await store.getKeys('session', ['x.0']);
      if (!Buffer.isBuffer(session['x.0']) || session['x.0'].toString() !== 'session') throw new Error('a stored session read back different');
      throw new Rollback();
    });
  } catch (error) {
    if (!(error instanceof Rollback)) throw error;
  }
}
