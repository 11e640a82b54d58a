import type { AddressInfo } from 'node:net';
/** `waygate serve`: opens the database, migrates, and runs the roles asked for until a signal. */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp, createServices, type Services } from './app.js';
import { ConfigError, type Config, type Role } from './config.js';
import { startControlSocket } from './control-socket.js';
import { openDatabase, type Database } from './platform/database.js';
import { runMigrations } from './platform/migrate.js';
import { createLogger } from './platform/logger.js';
import { VERSION } from './platform/build-info.js';
import { WorkerRuntime } from './worker-runtime.js';

export interface RunningServer {
  app: FastifyInstance;
  database: Database;
  /** Where it listens; undefined for a worker without WORKER_PORT. */
  address: string | undefined;
  stop(): Promise<void>;
}

/**
 * Tells the operator of a fresh install how to claim it: the dashboard's sign-up, with the setup
 * code unless the server listens on loopback only, or the CLI.
 */
async function announceFreshInstall(config: Config, services: Services, log: Logger): Promise<void> {
  const cli = 'or create it with the CLI: waygate accounts create --email you@example.com --password <password>, then waygate tokens create --email you@example.com --name laptop';
  if (!config.setupCodeRequired) {
    log.info(`No account exists yet. Open ${config.publicUrl}/dashboard/signup to sign up as the first user, ${cli}`);
    return;
  }
  const setupCode = await services.accounts.setupCode();
  const setupUrl = `${config.publicUrl}/dashboard/signup?code=${setupCode}`;
  log.warn(
    { setupUrl, setupCode },
    `No account exists yet. Claim this installation at ${setupUrl} (the first sign-up needs setup code ${setupCode}; it is valid until an account exists), ${cli}`,
  );
}

/** `usage`: the CLI's usage text, for operator commands that reach this server through its control socket. */
export async function startServer(config: Config, role: Role, usage = ''): Promise<RunningServer> {
  if (role !== 'all' && !config.databaseUrl) {
    throw new ConfigError([
      `--role ${role} needs DATABASE_URL: the embedded database (PGlite) serves one process, so separate ` +
        'api and worker processes must share a PostgreSQL server.',
    ]);
  }
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  let app: FastifyInstance | undefined;
  let worker: WorkerRuntime | undefined;
  let workerDatabase: Database | undefined;
  let control: { close(): Promise<void> } | undefined;
  // One process serving both roles: direct sends skip the queue round trip (see dispatch.ts).
  const services = createServices(database, config, { servesApi: role !== 'worker', ...(role === 'all' ? { directHost: () => worker?.supervisor } : {}) });
  try {
    await runMigrations(database, log);
    app = await buildApp({ config, database, services, apiRoutes: role !== 'worker', logger: log });
    if (role !== 'api') {
      // On PostgreSQL the worker's state transitions commit asynchronously, on a pool of their
      // own (see openDatabase); PGlite is one connection, shared, and the API's statements go first.
      workerDatabase = config.databaseUrl
        ? await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 10, synchronousCommit: false, applicationName: 'waygate-worker' })
        : database.background();
      worker = new WorkerRuntime(config, workerDatabase, services.bus, log);
      await worker.start();
    }
    // A worker has only ops routes, and listens only where asked (WORKER_PORT), so it never takes
    // the API's port on the same machine.
    const port = role === 'worker' ? config.workerPort : config.port;
    const address = port === undefined ? undefined : await app.listen({ port, host: config.host });
    // The embedded database is this process's alone: the CLI's operator commands come through here.
    if (database.kind === 'pglite') control = await startControlSocket(config.dataDir, database, log, usage);
    // `address` is a URL to open on this machine; `listening` is the bound host and port (0.0.0.0: every interface).
    const bound = address === undefined ? undefined : (app.server.address() as AddressInfo | null);
    log.info(
      {
        version: VERSION,
        role,
        database: database.kind,
        network: config.network,
        address: address ?? 'no listener (set WORKER_PORT for /healthz and /metrics)',
        ...(bound ? { listening: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}` } : {}),
      },
      'waygate is up',
    );
    if (role !== 'worker' && !(await services.accounts.hasUsers())) await announceFreshInstall(config, services, log);
    let stopping: Promise<void> | undefined;
    const running: RunningServer = {
      app,
      database,
      address,
      stop() {
        stopping ??= (async () => {
          const started = Date.now();
          // Drain: stop taking requests, let the worker finish what it has in flight, then close.
          await app!.close();
          await control?.close();
          await worker?.stop();
          await services.close();
          if (workerDatabase && workerDatabase !== database) await workerDatabase.close();
          await database.close();
          log.info({ durationMs: Date.now() - started }, 'shutdown complete');
        })();
        return stopping;
      },
    };
    return running;
  } catch (error) {
    await app?.close().catch(() => undefined);
    await control?.close().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
    await services.close().catch(() => undefined);
    if (workerDatabase && workerDatabase !== database) await workerDatabase.close().catch(() => undefined);
    await database.close().catch(() => undefined);
    throw error;
  }
}
