/**
 * Run as a child process by test/whatsapp-baileys.test.ts (a crash must show as a dead process,
 * which a test runner's worker would hide): Waygate's own WhatsApp session with the REAL Baileys
 * socket, against endpoints on 127.0.0.1 that put the socket in each state it can be ended in,
 * and the session closed (as on a lease loss or a shutdown) in that state. Prints one JSON line
 * per state and `{"done":true}`; any uncaught exception or unhandled rejection is printed and
 * exits 1.
 *
 * States: `dialing` (ended right after the socket was made, before TCP connected), `upgrading`
 * (TCP accepted, the HTTP upgrade never answered), `open-silent` (upgraded, then nothing: Baileys
 * waits for the noise handshake), `closed` (upgraded, then the server hung up; the socket already
 * closed itself), `refused` (nothing listens).
 */
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createBus } from '../../src/platform/bus.js';
import { openDatabase } from '../../src/platform/database.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { baileysHelpers, baileysSocketFactory, loadBaileys } from '../../src/network/whatsapp/baileys.js';
import { WaVersionSource } from '../../src/network/whatsapp/version.js';
import { WhatsAppNetwork } from '../../src/network/whatsapp/whatsapp-network.js';
import { closedPort, silentListener, upgradingServer } from './local-endpoints.js';

process.on('uncaughtException', (error) => {
  console.log(JSON.stringify({ uncaught: String(error?.stack ?? error) }));
  process.exit(1);
});
process.on('unhandledRejection', (error) => {
  console.log(JSON.stringify({ unhandledRejection: String((error as Error)?.stack ?? error) }));
  process.exit(1);
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const database = await openDatabase({ dataDir: 'memory://' });
  await runMigrations(database);
  const bus = createBus(database);
  const baileys = await loadBaileys();
  const log = pino({ level: 'silent' });
  await database.query(`INSERT INTO accounts (id, name, plan_id) VALUES ('acc_child', 'child', 'free')`);

  const run = async (state: string, port: number, reached: () => Promise<void>): Promise<void> => {
    const config = loadConfig({ NETWORK: 'whatsapp', WHATSAPP_WS_URL: `ws://127.0.0.1:${port}/ws/chat`, WHATSAPP_CONNECT_TIMEOUT_MS: '60000', WHATSAPP_WA_VERSION: '2.3000.1', WHATSAPP_LOG_LEVEL: 'silent' }).whatsapp;
    const network = new WhatsAppNetwork({
      database,
      bus,
      log,
      config,
      socketFactory: baileysSocketFactory(baileys, config),
      helpers: baileysHelpers(baileys),
      version: new WaVersionSource(config, baileys.DEFAULT_CONNECTION_CONFIG.version, log),
      linkingBackoffMs: [60_000],
    });
    const deviceId = `dev_${state.replace(/\W/g, '')}`;
    await database.query(`INSERT INTO devices (id, account_id, name, status) VALUES ($1, 'acc_child', $2, 'PENDING')`, [deviceId, state]);
    const session = await network.openSession({ id: deviceId, accountId: 'acc_child', phoneNumber: null, status: 'PENDING' }, { onEvent: async () => undefined });
    await reached();
    await session.close();
    await network.close();
    // Whatever the websocket reports after it was ended arrives within a few ticks.
    await sleep(300);
    console.log(JSON.stringify({ state, alive: true }));
  };

  {
    const listener = await silentListener();
    await run('dialing', listener.port, async () => undefined);
    listener.close();
  }
  {
    const listener = await silentListener();
    await run('upgrading', listener.port, () => listener.connected);
    listener.close();
  }
  {
    const server = await upgradingServer('silent');
    await run('open-silent', server.port, async () => {
      await server.upgraded;
      await sleep(100);
    });
    server.close();
  }
  {
    const server = await upgradingServer('hang-up');
    await run('closed', server.port, async () => {
      await server.upgraded;
      await sleep(300);
    });
    server.close();
  }
  {
    const port = await closedPort();
    await run('refused', port, () => sleep(300));
  }
  await bus.close();
  await database.close();
  console.log(JSON.stringify({ done: true }));
  // Baileys keeps module-level timers (caches); the verdict is printed, so leave now.
  process.exit(0);
}

void main().catch((error: unknown) => {
  console.log(JSON.stringify({ error: String((error as Error)?.stack ?? error) }));
  process.exit(1);
});
