/**
 * The waygate CLI as an operator runs it: real processes, a real data directory, and (when
 * TEST_DATABASE_URL is set) several processes migrating one fresh PostgreSQL database at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli } from './cli-process.js';

const run = runCli;

const tempDirs: string[] = [];
function tempDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-cli-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('waygate CLI on the embedded database', () => {
  // Each command is a process of its own that boots PGlite (the first also runs initdb and every
  // migration): about ten of them per test, which took over 120 s beside a full suite at load 9.
  it('creates an account and tokens, lists and revokes them', async () => {
    const env = { DATA_DIR: tempDataDir() };
    const created = await run(['accounts', 'create', '--email', 'Owner@Example.com', '--password', 'long password', '--plan', 'pro'], env);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/Created account acc_\w+ \(plan pro\) with user owner@example.com/);

    const token = await run(['tokens', 'create', '--email', 'owner@example.com', '--name', 'laptop', '--scopes', 'contacts:read,groups:read'], env);
    expect(token.code).toBe(0);
    // stdout is the token alone, so TOKEN=$(waygate tokens create ...) works.
    expect(token.stdout).toMatch(/^wg_[0-9A-Za-z]{43}\n$/);
    expect(token.stderr).toMatch(/shown only now/);

    const list = await run(['tokens', 'list', '--email', 'owner@example.com'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(token.stdout.trim());
    expect(list.stdout).toContain(`${token.stdout.slice(0, 7)}…${token.stdout.trim().slice(-4)}`);
    expect(list.stdout).toContain('active');
    const tokenId = /^(tok_\w+)/.exec(list.stdout)?.[1];
    expect(tokenId).toBeDefined();

    const revoked = await run(['tokens', 'revoke', '--id', tokenId!], env);
    expect(revoked.code).toBe(0);
    expect((await run(['tokens', 'list', '--email', 'owner@example.com'], env)).stdout).toContain('revoked');

    const plan = await run(['accounts', 'set-plan', '--email', 'owner@example.com', '--plan', 'yearly'], env);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain('yearly');
  }, 300_000);

  it('explains mistakes on stderr with a non-zero exit', async () => {
    const env = { DATA_DIR: tempDataDir() };
    const missing = await run(['accounts', 'create', '--email', 'x@example.com'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--password is required');
    const unknownPlan = await run(['accounts', 'create', '--email', 'x@example.com', '--password', 'long password', '--plan', 'gold'], env);
    expect(unknownPlan.code).toBe(1);
    expect(unknownPlan.stderr).toMatch(/Unknown plan "gold"/);
    const noUser = await run(['tokens', 'create', '--email', 'nobody@example.com', '--name', 'x'], env);
    expect(noUser.code).toBe(1);
    expect(noUser.stderr).toMatch(/NOT_FOUND/);
    const badEnv = await run(['migrate'], { ...env, PORT: 'eighty' });
    expect(badEnv.code).toBe(1);
    expect(badEnv.stderr).toMatch(/PORT must be a whole number/);
    const unknown = await run(['frobnicate'], env);
    expect(unknown.code).toBe(2);
  }, 300_000);

  it('runs operator commands through the server that holds the data directory, and refuses a second server', async () => {
    const dataDir = tempDataDir();
    // node itself with the tsx loader, not the tsx wrapper: the wrapper relays SIGTERM and sends
    // SIGKILL when the child has not acknowledged it within 30 ms (a busy machine), which would
    // skip the clean stop this test checks.
    const server: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
      env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
      cwd: ROOT,
    });
    try {
      const origin = await new Promise<string>((resolve, reject) => {
        let output = '';
        const timer = setTimeout(() => reject(new Error(`server did not start: ${output}`)), 60_000);
        server.stdout!.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const up = /"address":"(http:\/\/[^"]+)".*waygate is up/.exec(output);
          if (up) {
            clearTimeout(timer);
            resolve(up[1]!);
          }
        });
        server.on('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)));
      });
      const env = { DATA_DIR: dataDir };
      const created = await run(['accounts', 'create', '--email', 'a@example.com', '--password', 'long password', '--plan', 'pro'], env);
      expect(created.stderr).toBe('');
      expect(created.code).toBe(0);
      expect(created.stdout).toMatch(/^Created account acc_\w+ \(plan pro\) with user a@example.com\n$/);

      const token = await run(['tokens', 'create', '--email', 'a@example.com', '--name', 'laptop'], env);
      expect(token.code).toBe(0);
      expect(token.stdout).toMatch(/^wg_[0-9A-Za-z]{43}\n$/);
      expect(token.stderr).toMatch(/shown only now/);
      // The token works against the running server at once.
      const account = await fetch(`${origin}/account`, { headers: { 'x-api-key': token.stdout.trim() } });
      expect(account.status).toBe(200);

      // Mistakes are told the same way as without a server.
      const missing = await run(['accounts', 'create', '--email', 'b@example.com'], env);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('--password is required');
      const noUser = await run(['tokens', 'list', '--email', 'nobody@example.com'], env);
      expect(noUser.code).toBe(1);
      expect(noUser.stderr).toMatch(/NOT_FOUND/);

      // A second server cannot share the embedded database.
      const second = await run(['serve'], { ...env, PORT: '0', HOST: '127.0.0.1' });
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/in use by another Waygate process \(pid \d+\)/);
    } finally {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    // After a clean stop the lock and the socket are gone, the CLI opens the database itself and sees what the server wrote.
    expect(fs.readdirSync(dataDir)).not.toContain('waygate.lock');
    const list = await run(['tokens', 'list', '--email', 'a@example.com'], { DATA_DIR: dataDir });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/\tactive\t"laptop"\t/);
  }, 240_000);

  it('explains a role that needs PostgreSQL without a stack trace', async () => {
    const result = await run(['serve', '--role', 'api'], { DATA_DIR: tempDataDir(), DATABASE_URL: '' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--role api needs DATABASE_URL/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it('takes over a lock left by a process that died', async () => {
    const dataDir = tempDataDir();
    // A pid that is certainly not running: a process we started and that has exited.
    const dead = spawn(process.execPath, ['-e', '0']);
    const deadPid = await new Promise<number>((resolve) => dead.on('exit', () => resolve(dead.pid!)));
    fs.writeFileSync(path.join(dataDir, 'waygate.lock'), String(deadPid));
    const result = await run(['migrate'], { DATA_DIR: dataDir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Migrations applied');
  }, 120_000);
});

// In CI PostgreSQL must be there: the test fails rather than skips when it is not.
const databaseUrl = process.env.TEST_DATABASE_URL ?? (process.env.CI === 'true' ? 'postgres://postgres@127.0.0.1:5432/test' : undefined);
describe.skipIf(!databaseUrl)('migrations on PostgreSQL', () => {
  it('are safe when several processes start at once', async () => {
    const name = `waygate_migrate_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(databaseUrl!);
    url.pathname = `/${name}`;
    try {
      const results = await Promise.all([1, 2, 3].map(() => run(['migrate'], { DATABASE_URL: url.toString() })));
      for (const result of results) {
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
      }
      const check = new pg.Client({ connectionString: url.toString() });
      await check.connect();
      const { rows } = await check.query<{ n: number }>('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations');
      const plans = await check.query<{ n: number }>('SELECT count(*)::int AS n FROM plans');
      await check.end();
      const journal = JSON.parse(fs.readFileSync(path.join(ROOT, 'drizzle/meta/_journal.json'), 'utf8')) as { entries: unknown[] };
      expect(rows[0]!.n).toBe(journal.entries.length);
      expect(plans.rows[0]!.n).toBe(4);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  }, 120_000);
});
