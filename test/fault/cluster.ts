/**
 * Fault tests run the real CLI: `node --import tsx src/cli.ts serve --role …` processes on a
 * PostgreSQL database of their own, talking over 127.0.0.1 (benchmarks: the built `dist/cli.js`).
 * This module starts and stops them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/platform/database.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { AccountService } from '../../src/directory/accounts.js';
import { TokenService } from '../../src/directory/tokens.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Output chunks kept per process, for the error messages of tests. */
const OUTPUT_CHUNKS = 2_000;

export interface Proc {
  name: string;
  child: ChildProcess;
  origin: string;
  output: string[];
}

export interface Cluster {
  databaseUrl: string;
  token: string;
  procs: Proc[];
  /** Starts `serve --role <role>` with the cluster's database and `env` on top of the defaults. */
  start(name: string, role: 'api' | 'worker', env?: Record<string, string>): Promise<Proc>;
  /** Calls the API of `proc` with the cluster's token. */
  api<T>(proc: Proc, method: string, url: string, body?: unknown): Promise<{ status: number; json: T }>;
  /** Kills every process, and drops the database. */
  close(): Promise<void>;
}

/** How a server process runs the product. */
export interface StartOptions {
  /**
   * true: `node dist/cli.js serve`, the built product as `npm start` runs it (build it first).
   * false (default): `src/cli.ts` through the tsx loader, no build needed (tests); the loader and
   * the TypeScript it compiles add about 60 MB to the process's resident set.
   */
  built?: boolean;
}

/** Node's arguments that run the CLI as `options` says, before its own (`serve`, …); spawn it in the repository. */
export function cliArgs(options: StartOptions = {}): string[] {
  return options.built ? [path.join(ROOT, 'dist/cli.js')] : ['--import', 'tsx', 'src/cli.ts'];
}

/** Creates a fresh, migrated database on the server at `baseUrl` with one unlimited account and its token. */
export async function createCluster(baseUrl: string, prefix: string, defaults: Record<string, string>, options: StartOptions = {}): Promise<Cluster> {
  const dbName = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const database = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 2 });
  await runMigrations(database);
  const { accountId } = await new AccountService(database).createAccount({ email: `${prefix}@example.test`, password: 'fault test password', plan: 'unlimited' });
  const token = (await new TokenService(database).create(accountId, { name: 'fault' })).token;
  await database.close();

  const procs: Proc[] = [];
  return {
    databaseUrl,
    token,
    procs,
    async start(name, role, env = {}) {
      // node itself (not the tsx wrapper), so the pid in a lease owner is the process a test kills.
      // env.NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to node itself, for profiling one process.
      const nodeArgs = env.NODE_ARGS?.split(' ').filter(Boolean) ?? [];
      const child = spawn(process.execPath, [...nodeArgs, ...cliArgs(options), 'serve', '--role', role], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', WORKER_PORT: '0', LOG_LEVEL: 'info', NETWORK: 'sandbox', ...defaults, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // The process's latest output (a bounded tail: a process under load logs every request).
      const output: string[] = [];
      const keep = (chunk: Buffer): void => {
        output.push(chunk.toString());
        if (output.length > OUTPUT_CHUNKS) output.splice(0, output.length - OUTPUT_CHUNKS);
      };
      let starting: string | undefined = '';
      const origin = await new Promise<string>((resolve, reject) => {
        // One that does not start is killed: it must not outlive the test (or burn the machine's CPU under the next benchmark).
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`${name} did not start:\n${output.join('')}`));
        }, 60_000);
        child.stdout!.on('data', (chunk: Buffer) => {
          keep(chunk);
          if (starting === undefined) return;
          starting += chunk.toString();
          const match = /"address":"(http:\/\/[^"]+)"/.exec(starting);
          if (match) {
            starting = undefined;
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.stderr!.on('data', keep);
        child.once('exit', (code) => reject(new Error(`${name} exited with ${code}:\n${output.join('')}`)));
      });
      const proc = { name, child, origin, output };
      procs.push(proc);
      return proc;
    },
    async api<T>(proc: Proc, method: string, target: string, body?: unknown) {
      const response = await fetch(`${proc.origin}${target}`, {
        method,
        headers: { 'x-api-key': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, json: (await response.json()) as T };
    },
    async close() {
      for (const proc of procs) if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
      await Promise.all(
        procs.map((proc) => new Promise((resolve) => (proc.child.exitCode !== null || proc.child.signalCode !== null ? resolve(null) : proc.child.once('exit', resolve)))),
      );
      const cleanup = new pg.Client({ connectionString: baseUrl });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

/** Polls `probe` every `intervalMs` until it returns a value, or fails naming what it waited for. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
