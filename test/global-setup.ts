/**
 * On PGlite, the run migrates one in-memory database and dumps its data directory to a file;
 * each test file starts from that dump (openTestDatabase) instead of running initdb and every
 * migration again.
 * With TEST_DATABASE_URL, every test run gets a migrated template database of its own, created
 * here on that server and dropped at the end; each test file then works in a copy of it
 * (CREATE DATABASE … TEMPLATE, see openTestDatabase), so files never see each other's rows or
 * workers, and runs never see an older schema.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/platform/database.js';
import { runMigrations } from '../src/platform/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The server's URL (for CREATE DATABASE) and the template to copy, when on PostgreSQL. */
    postgres: { serverUrl: string; template: string } | undefined;
    /** On PGlite: a file holding a dump of a migrated data directory, which each test file starts from. */
    pgliteTemplate: string | undefined;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    project.provide('postgres', undefined);
    // initdb and the migrations once per run, not once per file: each file loads this dump.
    const database = await openDatabase({ dataDir: 'memory://' });
    await runMigrations(database);
    const dump = await database.pglite!.dumpDataDir('none');
    await database.close();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'waygate-pglite-'));
    const file = path.join(dir, 'template.tar');
    await writeFile(file, Buffer.from(await dump.arrayBuffer()));
    project.provide('pgliteTemplate', file);
    return async () => rm(dir, { recursive: true, force: true });
  }
  project.provide('pgliteTemplate', undefined);
  const template = `waygate_test_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${template}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'unused', poolSize: 1 });
  await runMigrations(database);
  await database.close();
  project.provide('postgres', { serverUrl: base, template });
  return async () => {
    const cleanup = new pg.Client({ connectionString: base });
    await cleanup.connect();
    const copies = await cleanup.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${template}%`]);
    for (const { datname } of copies.rows) await cleanup.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    await cleanup.end();
  };
}
