/**
 * The setup of the benchmarks that time API reads on a large seeded database (listings, tables,
 * chats, overview): a database of their own, created anew, with an account and its token made
 * through the product's services, the API as `waygate serve --role api` starts it in a child
 * process (server-process.ts), the devices and webhook endpoints asked for, and a client for
 * seeding. `close()` stops the server and drops the database (BENCH_KEEP_DATABASE=1 keeps it, to
 * look at plans with EXPLAIN).
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { AccountService } from '../../src/directory/accounts.js';
import { TokenService } from '../../src/directory/tokens.js';
import { openDatabase } from '../../src/platform/database.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { startServer } from '../../src/server.js';
import { benchDatabaseUrl } from './bench-database.js';
import { startServerProcess, type ServerProcess, type StartedServers } from './server-process.js';
import { api, dropDatabase, recreateDatabase } from './tenant.js';

const THIS_FILE = fileURLToPath(import.meta.url);

interface ServerInput {
  databaseUrl: string;
}
interface ServerInfo {
  origin: string;
}

/** Runs in the server process: the API as `waygate serve --role api` starts it. */
export async function startApiBenchServer(input: ServerInput): Promise<StartedServers<ServerInfo>> {
  const config = loadConfig({
    DATABASE_URL: input.databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    NETWORK: 'sandbox',
    ALLOW_PRIVATE_URLS: 'true',
  });
  const server = await startServer(config, 'api');
  return { info: { origin: server.address!.replace('localhost', '127.0.0.1') }, close: () => server.stop() };
}

/** Migrates and creates the account with its token, through the product's services. */
export async function makeAccount(databaseUrl: string, label: string): Promise<{ accountId: string; token: string }> {
  const database = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 2 });
  try {
    await runMigrations(database);
    const { accountId } = await new AccountService(database).createAccount({ email: `${label}-bench@waygate.test`, password: 'benchmark password', plan: 'unlimited' });
    const { token } = await new TokenService(database).create(accountId, { name: 'bench' });
    return { accountId, token };
  } finally {
    await database.close();
  }
}

export interface ApiFixture {
  databaseUrl: string;
  client: pg.Client;
  origin: string;
  accountId: string;
  token: string;
  /** The devices asked for, in order (unlinked: seeded rows need only their ids). */
  deviceIds: string[];
  /** The webhook endpoints asked for (inactive, so nothing is delivered). */
  endpointIds: string[];
  /** Stops the server and drops the database (unless BENCH_KEEP_DATABASE=1). */
  close(): Promise<void>;
}

export async function openApiFixture(databaseName: string, wanted: { devices: string[]; endpoints?: number }): Promise<ApiFixture> {
  const base = new URL(benchDatabaseUrl());
  base.pathname = `/${databaseName}`;
  const databaseUrl = base.toString();
  console.log(`Recreating ${databaseUrl} …`);
  await recreateDatabase(databaseUrl);
  let server: ServerProcess<ServerInfo> | undefined;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: databaseName });
  const close = async () => {
    await client.end().catch(() => undefined);
    await server?.stop();
    if (process.env.BENCH_KEEP_DATABASE === '1') console.log(`Kept ${databaseUrl} (BENCH_KEEP_DATABASE=1)`);
    else await dropDatabase(databaseUrl);
  };
  try {
    const { accountId, token } = await makeAccount(databaseUrl, databaseName.replace(/^waygate_bench_/, ''));
    server = await startServerProcess<ServerInput, ServerInfo>(THIS_FILE, 'startApiBenchServer', { databaseUrl });
    const origin = server.info.origin;
    const create = async (path: string, body: unknown): Promise<string> => {
      const answer = await api<{ data: { id: string } }>(origin, token, 'POST', path, body);
      if (answer.status !== 201) throw new Error(`POST ${path} answered ${answer.status}: ${JSON.stringify(answer.json)}`);
      return answer.json.data.id;
    };
    const endpointIds: string[] = [];
    for (let i = 0; i < (wanted.endpoints ?? 0); i++) endpointIds.push(await create('/webhooks', { url: `http://127.0.0.1:9/bench-${i}`, active: false }));
    const deviceIds: string[] = [];
    for (const name of wanted.devices) deviceIds.push(await create('/devices', { name }));
    await client.connect();
    return { databaseUrl, client, origin, accountId, token, deviceIds, endpointIds, close };
  } catch (error) {
    await close();
    throw error;
  }
}
