#!/usr/bin/env node
/**
 * The `waygate` command: serve | migrate | accounts create|set-plan | tokens create|list|revoke |
 * doctor whatsapp.
 * Operator commands print results on stdout (`tokens create` prints only the token, so it can be
 * captured: TOKEN=$(waygate tokens create ...)) and problems on stderr with a non-zero exit.
 */
import path from 'node:path';
import v8 from 'node:v8';
import { ConfigError, loadConfig, loadEnvFile, type Config, type Role } from './config.js';
import { runThroughServer } from './control-socket.js';
import { openDatabase } from './platform/database.js';
import { DataDirLockedError } from './platform/data-dir-lock.js';
import { runMigrations } from './platform/migrate.js';
import { whatsappDoctor } from './network/whatsapp/doctor.js';
import { isOperatorCommand, parseCommandLine, reportFailure, runOperatorCommand, UsageError, type CommandValues, type Output } from './operator-commands.js';
import { startServer } from './server.js';
import { VERSION } from './platform/build-info.js';
import { POSTGRES_BACKUP_ADVICE, RestoreRefusedError, restoreBackup } from './platform/embedded-backup.js';

const USAGE = `Usage: waygate <command> [options]
       waygate --version

Commands:
  serve [--role all|api|worker]                      Run the service (default role: all)
  migrate                                            Apply database migrations and exit
  accounts create --email E --password P [--plan NAME] [--name N]
  accounts set-plan --email E --plan NAME            Plans: free, pro, yearly, unlimited
  tokens create --email E --name N [--scopes a,b] [--expires-at ISO]
                                                     Prints only the token value
  tokens list --email E
  tokens revoke --id ID
  backup --out FILE                                  Embedded database: a consistent copy, also while the server runs
  restore FILE [--data-dir DIR] [--force]            Embedded database: unpack a backup into DATA_DIR (or DIR), which
                                                     must be empty unless --force; the server must be stopped
  doctor whatsapp                                    Before linking a phone: is WhatsApp reachable, which
                                                     web version is used, does the auth store round-trip

Configuration comes from the environment (see docs/operations.md): DATABASE_URL, DATA_DIR, PORT, ...`;

const console_: Output = { stdout: (line) => console.log(line), stderr: (line) => console.error(line) };

/**
 * An operator command on the configured database. On the embedded one, while a server holds the
 * data directory, the command runs in that server (through its control socket) instead.
 */
async function operatorCommand(config: Config, argv: string[], command: string, values: CommandValues): Promise<number> {
  let database;
  try {
    database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    const answer = await runThroughServer(config.dataDir, argv);
    if (!answer) throw error;
    for (const line of answer.stdout) console_.stdout(line);
    for (const line of answer.stderr) console_.stderr(line);
    return answer.code;
  }
  try {
    await runMigrations(database);
    return await runOperatorCommand(database, command, values, console_);
  } finally {
    await database.close();
  }
}

/** `restore FILE [--data-dir DIR] [--force]`: never through a server, which would hold the directory. */
async function restore(config: Config, args: string[], values: CommandValues): Promise<number> {
  const [file, ...extra] = args;
  if (!file || extra.length > 0) throw new UsageError('restore takes one backup file: waygate restore FILE [--data-dir DIR] [--force]');
  const dataDir = path.resolve(typeof values['data-dir'] === 'string' ? values['data-dir'] : config.dataDir);
  try {
    const facts = await restoreBackup(path.resolve(file), dataDir, values.force === true);
    console.log(`Restored ${file} into ${dataDir}: ${facts.accounts} accounts, ${facts.messages} messages, ${facts.migrations} migrations applied (a newer build migrates it at start).`);
    return 0;
  } catch (error) {
    if (!(error instanceof RestoreRefusedError) && !(error instanceof DataDirLockedError)) throw error;
    console.error(error instanceof DataDirLockedError ? `${error.message} Stop the server before restoring into its data directory.` : error.message);
    return 1;
  }
}

/** `doctor whatsapp`: checks a user runs on their own machine before linking a phone. */
async function doctor(config: Config): Promise<number> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    await runMigrations(database);
    const marks = { true: 'ok  ', false: 'FAIL', warn: 'warn' };
    const passed = await whatsappDoctor(config, database, ({ ok, check, detail }) => console.log(`${marks[String(ok) as keyof typeof marks]}  ${check}: ${detail}`));
    console.log(passed ? 'WhatsApp checks passed: link a phone with POST /devices.' : 'Some WhatsApp checks failed (see above).');
    // The test socket's websocket may wait up to 30 s for a close handshake its server never
    // answers; the report is complete, so the process does not wait for it.
    setTimeout(() => process.exit(), 100).unref();
    return passed ? 0 : 1;
  } finally {
    await database.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const { command, values, args } = parseCommandLine(argv);
  if (values.version) {
    console.log(VERSION);
    return 0;
  }
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  loadEnvFile();
  const config = loadConfig();
  if ((command === 'backup' || command === 'restore') && config.databaseUrl) {
    console.error(`waygate ${command} is for the embedded database; DATABASE_URL is set. ${POSTGRES_BACKUP_ADVICE}`);
    return 1;
  }
  if (command === 'backup') {
    // The server that may run it writes the file itself: it gets the path as this shell means it.
    if (typeof values.out !== 'string' || values.out === '') throw new UsageError('--out FILE is required');
    const out = path.resolve(values.out);
    return operatorCommand(config, ['backup', '--out', out], command, { ...values, out });
  }
  if (command === 'restore') return restore(config, args, values);
  if (isOperatorCommand(command)) return operatorCommand(config, argv, command, values);
  if (command === 'doctor whatsapp') return doctor(config);
  if (command !== 'serve') throw new UsageError(`Unknown command "${command}"`);

  // Collect garbage more eagerly than V8's default (which lets the heap grow up to 4x its
  // live size between full collections): a bulk send allocates fast and short-lived, and
  // peak memory fell from 310-350 MB to ~200 MB on a 100,000-message job at the same
  // throughput. No hard cap: the heap still grows when live data needs it. NODE_OPTIONS
  // with --heap-growing-percent overrides this.
  if (!/--heap-growing-percent/.test(process.env.NODE_OPTIONS ?? '')) v8.setFlagsFromString('--heap-growing-percent=30');
  const role = ((values.role as string | undefined) ?? 'all') as Role;
  if (!['all', 'api', 'worker'].includes(role)) throw new UsageError('--role must be all, api or worker');
  const server = await startServer(config, role, USAGE);
  let signals = 0;
  const shutdown = (signal: string): void => {
    signals++;
    if (signals > 1) process.exit(1);
    server.app.log.info({ signal }, 'shutting down');
    server.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  return new Promise<number>(() => undefined);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ConfigError || error instanceof DataDirLockedError) {
      console.error(error.message);
      process.exitCode = 1;
    } else process.exitCode = reportFailure(error, console_, USAGE);
  },
);
