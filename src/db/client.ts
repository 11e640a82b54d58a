/**
 * Opens the database: PostgreSQL through node-postgres when DATABASE_URL is set, otherwise
 * PGlite (Postgres compiled to WASM) in DATA_DIR. Both give the same Drizzle API and run the
 * same SQL and migrations; nothing above this module knows which one is underneath.
 */
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { lockDataDir } from './data-dir-lock.js';
import { schema, type Schema } from './schema.js';

export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export interface Database {
  kind: 'pglite' | 'postgres';
  db: Db;
  /** Runs a raw statement and returns its rows. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
  /** The node-postgres pool, when on PostgreSQL (for LISTEN and dedicated connections). */
  pool?: pg.Pool;
  /** The PGlite instance, when embedded. */
  pglite?: PGlite;
}

export interface OpenDatabaseOptions {
  databaseUrl?: string | undefined;
  /** A directory, or 'memory://' for an in-memory PGlite (tests). */
  dataDir: string;
  poolSize?: number;
}

// Timestamps come back as Date objects from both drivers; int8 (count(*)) as a JS number.
pg.types.setTypeParser(20, (value) => Number(value));

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 20,
      application_name: 'waygate',
    });
    // An idle client that errors (server restart) must not crash the process; the pool replaces it.
    pool.on('error', () => undefined);
    const db = drizzlePg(pool, { schema }) as unknown as Db;
    return {
      kind: 'postgres',
      db,
      pool,
      async query<T>(text: string, params: unknown[] = []) {
        const result = await pool.query(text, params);
        return result.rows as T[];
      },
      async close() {
        await pool.end();
      },
    };
  }

  const inMemory = options.dataDir.startsWith('memory://');
  const lock = inMemory ? undefined : lockDataDir(options.dataDir);
  try {
    const pglite = await PGlite.create(inMemory ? options.dataDir : `${options.dataDir}/pgdata`, {
      extensions: { pg_trgm },
    });
    const db = drizzlePglite(pglite, { schema }) as unknown as Db;
    return {
      kind: 'pglite',
      db,
      pglite,
      async query<T>(text: string, params: unknown[] = []) {
        const result = await pglite.query<T>(text, params);
        return result.rows;
      },
      async close() {
        await pglite.close();
        lock?.release();
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}
