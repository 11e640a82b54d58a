/**
 * Backup and restore of the embedded database (PGlite in DATA_DIR). A backup is a gzipped tarball
 * of the whole PGlite data directory, taken after a checkpoint in one turn of the database
 * (Database.snapshot): while the server runs, no statement runs between the checkpoint and the
 * copy, so the copy is the state between two statements, and a transaction left open at that
 * instant is rolled back when the copy is opened, as after a crash. Restoring unpacks the tarball
 * into a data directory nobody holds and opens it once, so a broken archive fails now, not at the
 * next start. PostgreSQL has its own tools (pg_dump, pg_restore): see POSTGRES_BACKUP_ADVICE.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { lockDataDir } from './data-dir-lock.js';
import { pgliteDataPath, pgliteOptions, type Database, type Queryable } from './database.js';

export const POSTGRES_BACKUP_ADVICE =
  'With DATABASE_URL (PostgreSQL) use PostgreSQL\'s own tools: pg_dump -Fc "$DATABASE_URL" -f waygate.dump to back up ' +
  '(while Waygate runs), pg_restore --clean --if-exists -d "$DATABASE_URL" waygate.dump to restore (with Waygate stopped).';

export interface BackupFacts {
  accounts: number;
  messages: number;
  /** The newest migration applied: a build that knows it (or a newer one) can open the backup. */
  migrations: number;
}

async function factsOf(tx: Queryable): Promise<BackupFacts> {
  const [row] = await tx.query<BackupFacts>(
    `SELECT (SELECT count(*)::int FROM accounts) AS accounts, (SELECT count(*)::int FROM messages) AS messages,
            (SELECT count(*)::int FROM drizzle.__drizzle_migrations) AS migrations`,
  );
  return row!;
}

/** Writes a backup of `database` (embedded) to `file`, atomically (a partial file is never left under its name). */
export async function writeBackup(database: Database, file: string): Promise<BackupFacts & { bytes: number }> {
  if (!database.snapshot) throw new Error(POSTGRES_BACKUP_ADVICE);
  const { facts, archive } = await database.snapshot(factsOf);
  const bytes = Buffer.from(await archive.arrayBuffer());
  const partial = `${file}.partial-${process.pid}`;
  try {
    fs.writeFileSync(partial, bytes, { mode: 0o600 });
    fs.renameSync(partial, file);
  } finally {
    fs.rmSync(partial, { force: true });
  }
  return { ...facts, bytes: bytes.length };
}

export class RestoreRefusedError extends Error {}

/**
 * Unpacks the backup `file` into `dataDir` (locked meanwhile, so a server cannot start on it
 * half-written). Refuses a directory that holds a database unless `force`, which replaces it.
 */
export async function restoreBackup(file: string, dataDir: string, force: boolean): Promise<BackupFacts> {
  if (!fs.existsSync(file)) throw new RestoreRefusedError(`No backup file at ${file}`);
  const lock = lockDataDir(dataDir);
  try {
    const target = pgliteDataPath(dataDir);
    if (fs.existsSync(target) && fs.readdirSync(target).length > 0) {
      if (!force) {
        throw new RestoreRefusedError(
          `${dataDir} already holds a database: restore into an empty directory (--data-dir DIR), or add --force to replace it (its current data is lost)`,
        );
      }
      fs.rmSync(target, { recursive: true, force: true });
    }
    const archive = new Blob([fs.readFileSync(file)], { type: 'application/x-gzip' });
    let pglite: PGlite | undefined;
    try {
      pglite = await PGlite.create(target, { ...pgliteOptions(), loadDataDir: archive });
      const facts = await factsOf({ query: async <R>(text: string, params: unknown[] = []) => (await pglite!.query<R>(text, params)).rows });
      await pglite.exec('CHECKPOINT');
      return facts;
    } catch (error) {
      // Leave no half-restored database behind to be mistaken for a good one.
      await pglite?.close().catch(() => undefined);
      pglite = undefined;
      fs.rmSync(target, { recursive: true, force: true });
      throw new RestoreRefusedError(`${path.basename(file)} is not a Waygate backup that can be opened: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      await pglite?.close();
    }
  } finally {
    lock.release();
  }
}
