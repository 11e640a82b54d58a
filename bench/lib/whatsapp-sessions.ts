/**
 * Memory per linked WhatsApp number, in a process of its own (startServerProcess): the product's
 * WhatsAppNetwork and DeviceSupervisor on PostgreSQL, each session on the fake Baileys socket
 * (test/whatsapp/fake-socket.ts: no network) with the real auth state: Baileys' own
 * initAuthCreds keys, stored and read through the database-backed signal key store. Each device
 * is linked (pair-success, restart) and then connected; the process's RSS is read after a
 * collection before the supervisor starts and once every session is open.
 *
 * What it does not hold that a real session does: the WebSocket and its buffers, the noise
 * handshake's state, and the pre-keys and Signal sessions a real phone's traffic creates.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import pino from 'pino';
import { createServices } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DeviceSupervisor } from '../../src/devices/device-supervisor.js';
import { AccountService } from '../../src/directory/accounts.js';
import { WhatsAppNetwork } from '../../src/network/whatsapp/whatsapp-network.js';
import { GuardedHttp } from '../../src/outbound/ssrf.js';
import { openDatabase } from '../../src/platform/database.js';
import { newId } from '../../src/platform/ids.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { FakeBaileys } from '../../test/whatsapp/fake-socket.js';
import { realHelpers, testVersionSource } from '../../test/whatsapp/harness.js';
import type { StartedServers } from './server-process.js';

export interface SessionsInput {
  databaseUrl: string;
  sessions: number;
}
export interface SessionsInfo {
  sessions: number;
  connected: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  heapBeforeMb: number;
  heapAfterMb: number;
  linkSeconds: number;
}

const rssMb = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN) / 1024;
const heapMb = (): number => process.memoryUsage().heapUsed / 1024 / 1024;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Full collections with pauses between, so what is measured is what stays reachable. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function startWhatsAppSessions(input: SessionsInput): Promise<StartedServers<SessionsInfo>> {
  const env = { DATABASE_URL: input.databaseUrl, NETWORK: 'whatsapp', LEASE_MS: '30000', LOG_LEVEL: 'warn', MAX_DEVICES_PER_WORKER: String(input.sessions) };
  const config = loadConfig(env);
  const log = pino({ level: 'warn' });
  const database = await openDatabase({ databaseUrl: input.databaseUrl, dataDir: 'unused', poolSize: 10 });
  await runMigrations(database);
  const services = createServices(database, config);
  const { accountId } = await new AccountService(database).createAccount({ email: `wa-sessions-${Date.now()}@waygate.test`, password: 'benchmark password', plan: 'unlimited' });
  const ids = Array.from({ length: input.sessions }, () => newId('dev'));
  await database.query(`INSERT INTO devices (id, account_id, name, status) SELECT id, $2, 'bench phone', 'PENDING' FROM unnest($1::text[]) AS id`, [ids, accountId]);

  const fake = new FakeBaileys();
  let phones = 0;
  // A socket without credentials pairs (as a scanned QR does) and restarts; one with them opens.
  fake.script = (socket) => (socket.auth.creds.me ? socket.open() : socket.pairSuccess(`62811${String(++phones).padStart(7, '0')}`));
  const network = new WhatsAppNetwork({
    database,
    bus: services.bus,
    log,
    config: config.whatsapp,
    socketFactory: fake.factory,
    helpers: await realHelpers(),
    version: testVersionSource(),
    linkingBackoffMs: [50, 100],
    flapBackoffMs: [200, 400],
  });
  const http = new GuardedHttp(true);
  const supervisor = new DeviceSupervisor(database, services.bus, network, http, config, log);

  await settle();
  const rssBeforeMb = rssMb();
  const heapBeforeMb = heapMb();
  const started = Date.now();
  supervisor.start();
  const deadline = Date.now() + 10 * 60_000;
  let connected = 0;
  while (Date.now() < deadline) {
    const [row] = await database.query<{ n: number }>(`SELECT count(*)::int AS n FROM devices WHERE account_id = $1 AND status = 'CONNECTED'`, [accountId]);
    connected = row?.n ?? 0;
    if (connected >= input.sessions) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const linkSeconds = (Date.now() - started) / 1000;
  await settle();
  return {
    info: { sessions: input.sessions, connected, rssBeforeMb, rssAfterMb: rssMb(), heapBeforeMb, heapAfterMb: heapMb(), linkSeconds },
    async close() {
      await supervisor.stop();
      await network.close();
      await http.close();
      await services.close();
      await database.close();
    },
  };
}
