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
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import pg from 'pg';
import { lockDataDir } from './data-dir-lock.js';
import { encodeParameters } from './pg-parameters.js';
import { schema, type Schema } from './schema.js';

export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export interface Queryable {
  /** Runs a raw statement and returns its rows. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

export interface Database extends Queryable {
  kind: 'pglite' | 'postgres';
  db: Db;
  /** Runs `work` in one transaction on one connection: committed if it resolves, rolled back if it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs a hot statement as a named prepared statement: on PostgreSQL each pooled connection parses
   * and plans it once and then only binds and executes it. One name, one text, always. On PGlite it
   * is a plain query().
   */
  queryPrepared<T = Record<string, unknown>>(statement: PreparedStatement): Promise<T[]>;
  close(): Promise<void>;
  /**
   * This database for background work (the worker role). On PGlite, one statement runs at a
   * time in this process's own thread, so background statements wait while any statement of the
   * API is queued: a request never waits behind more than the one statement already running.
   * Closing the view closes nothing. On PostgreSQL the worker opens a pool of its own instead.
   */
  background(): Database;
  /** The node-postgres pool, when on PostgreSQL (for LISTEN and dedicated connections). */
  pool?: pg.Pool;
  /** The PGlite instance, when embedded. */
  pglite?: PGlite;
  /**
   * Embedded only: a copy of the whole data directory (a gzipped tarball), taken after a
   * checkpoint in one turn of the database, with what `read` finds in that same state.
   */
  snapshot?<T>(read: (tx: Queryable) => Promise<T>): Promise<{ facts: T; archive: Blob }>;
}

export interface PreparedStatement {
  name: string;
  text: string;
  values: unknown[];
  /**
   * Plan it once per connection and never again (plan_cache_mode=force_generic_plan, on
   * connections of their own). Only for statements whose every table access is a key lookup or
   * an insert: a generic plan is made from the statistics of the moment, and one that scans a
   * table that has since grown (a plan made while messages was empty, say) would keep scanning.
   */
  genericPlan?: boolean;
}

/**
 * SQL: a boolean that is true, or raises serialization_failure so that the statement is run again
 * (waygate_rerun_if_skipped, drizzle/repeatable/00_rerun.sql), when the rows the statement wrote
 * (the sum of the counts `written`) are not the rows it locked and must write (the sum of
 * `locked`). Under READ COMMITTED a row another transaction changed after the statement's
 * snapshot, while the statement waited for it, is locked as a version that snapshot cannot see,
 * and a write by the locked row's address (ctid) skips it: run again, the statement sees it. The
 * caller runs such a statement through `retrying`.
 */
export const RERUN_IF_SKIPPED = (locked: string[], written: string[]): string =>
  `waygate_rerun_if_skipped(abs(${locked.map((l) => `(${l})`).join(' + ')} - ${written.map((w) => `(${w})`).join(' - ')}))`;

/**
 * Deadlock and serialization failure: the statement changed nothing and may simply be run again
 * (the claim, outcome, receipt and device-failing statements raise the latter themselves through
 * RERUN_IF_SKIPPED).
 */
const RETRYABLE = new Set(['40P01', '40001']);
const ATTEMPTS = 3;

/** Runs `statement`, again while it fails retryably, ATTEMPTS times at most. */
export async function retrying<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (error) {
      if (attempt >= ATTEMPTS || !RETRYABLE.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
}

export interface OpenDatabaseOptions {
  databaseUrl?: string | undefined;
  /** A directory, or 'memory://' for an in-memory PGlite (tests). */
  dataDir: string;
  poolSize?: number;
  /**
   * false: commits of this pool's connections do not wait for the WAL flush. For the worker's
   * state transitions only (claims, outcomes, receipts, fan-out): if the PostgreSQL server
   * itself crashes, the last few hundred milliseconds of them may be lost, which sends those
   * messages again with the same network id (the network de-duplicates it). Acceptance of a
   * request always commits synchronously.
   */
  synchronousCommit?: boolean;
  applicationName?: string;
  /** PGlite only: start from this dump of a data directory (PGlite's dumpDataDir) instead of an empty one. */
  loadDataDir?: Blob;
}

/**
 * The settings of the connections that run genericPlan statements. Sequential scans off too: a
 * generic plan is costed with the statistics of the moment it is made, and a scan chosen while a
 * table was small would stay after it grew.
 */
export const GENERIC_PLAN_SETTINGS = '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off';

const FOREGROUND = 0;
const BACKGROUND = 1;
type Priority = typeof FOREGROUND | typeof BACKGROUND;

/**
 * PGlite's statements, one at a time, the API's (foreground) before the worker's (background).
 * A PGlite statement runs in this thread and resolves on microtasks alone, so each first waits
 * for the event loop's next turn: a loop of them can never keep a request, a timer or a signal
 * from running, and what came in meanwhile is queued before it starts.
 */
class TurnTaking {
  private busy = false;
  private readonly waiting: [(() => void)[], (() => void)[]] = [[], []];

  async run<T>(priority: Priority, work: () => Promise<T>): Promise<T> {
    await nextMacrotask();
    if (this.busy) await new Promise<void>((resolve) => this.waiting[priority].push(resolve));
    else this.busy = true;
    try {
      return await work();
    } finally {
      // The next turn is given out from a macrotask: what arrived over the network while this
      // statement ran is read first, so an API request's statement is queued before the choice.
      setImmediate(() => {
        const next = this.waiting[FOREGROUND].shift() ?? this.waiting[BACKGROUND].shift();
        if (next) next();
        else this.busy = false;
      });
    }
  }
}

/**
 * Postgres settings PGlite starts with, beside PGlite's own (PGlite.defaultStartParams). Given on
 * the command line, so they hold for data directories made before them too (and over their
 * postgresql.conf). shared_buffers: PGlite keeps Postgres's 128 MB, and its shared memory is
 * allocated and zeroed inside the WASM heap at start, so all 128 MB were resident from the first
 * second to the last (the WASM heap never shrinks): about 110 MB of the idle server's 440. Pages
 * that no longer fit are read back through the operating system's file cache, which keeps them
 * anyway; a 20,000-recipient job took the same CPU time with 16 MB as with 128 MB.
 */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = { shared_buffers: '16MB' };

// Timestamps come back as Date objects from both drivers; int8 (count(*)) as a JS number.
pg.types.setTypeParser(20, (value) => Number(value));

/** Where PGlite keeps its files inside DATA_DIR. */
export const pgliteDataPath = (dataDir: string): string => `${dataDir}/pgdata`;

/** How every PGlite of Waygate starts: its extensions and settings. */
export function pgliteOptions(): { extensions: { pg_trgm: typeof pg_trgm }; startParams: string[] } {
  return {
    extensions: { pg_trgm },
    startParams: [...PGlite.defaultStartParams, ...Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
  };
}

/** PostgreSQL at `options.databaseUrl` through node-postgres, or else PGlite in `options.dataDir` (`memory://…`: in memory). */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  return options.databaseUrl ? openPostgres({ ...options, databaseUrl: options.databaseUrl }) : openPglite(options);
}

function openPostgres(options: OpenDatabaseOptions & { databaseUrl: string }): Database {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 20,
    application_name: options.applicationName ?? 'waygate',
    ...(options.synchronousCommit === false ? { options: '-c synchronous_commit=off' } : {}),
  });
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Statements marked genericPlan run here. PostgreSQL otherwise re-plans a named statement on
  // every execution while it judges custom plans cheaper: planning the direct send's statement
  // took longer than running it (accepting throughput 1,640 -> 2,120/s with one plan).
  let genericPool: pg.Pool | undefined;
  const generic = (): pg.Pool => {
    if (!genericPool) {
      genericPool = new pg.Pool({
        connectionString: options.databaseUrl,
        max: Math.max(2, Math.ceil((options.poolSize ?? 20) / 2)),
        application_name: `${options.applicationName ?? 'waygate'}-generic`,
        options: `${GENERIC_PLAN_SETTINGS}${options.synchronousCommit === false ? ' -c synchronous_commit=off' : ''}`,
      });
      genericPool.on('error', () => undefined);
    }
    return genericPool;
  };
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  const database: Database = {
    kind: 'postgres',
    db,
    pool,
    async query<T>(text: string, params: unknown[] = []) {
      const result = await pool.query(text, encodeParameters(params));
      return result.rows as T[];
    },
    async queryPrepared<T>(statement: PreparedStatement) {
      const { genericPlan, values, ...query } = statement;
      const result = await (genericPlan ? generic() : pool).query({ ...query, values: encodeParameters(values) });
      return result.rows as T[];
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work({
          async query<R>(text: string, params: unknown[] = []) {
            return (await client.query(text, encodeParameters(params))).rows as R[];
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async close() {
      await pool.end();
      await genericPool?.end();
    },
    background: () => database,
  };
  return database;
}

async function openPglite(options: OpenDatabaseOptions): Promise<Database> {
  const inMemory = options.dataDir.startsWith('memory://');
  const lock = inMemory ? undefined : lockDataDir(options.dataDir);
  try {
    const pglite = await PGlite.create(inMemory ? options.dataDir : pgliteDataPath(options.dataDir), {
      ...pgliteOptions(),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    });
    const db = drizzlePglite(pglite, { schema }) as unknown as Db;
    const turns = new TurnTaking();
    const view = (priority: Priority, close: () => Promise<void>): Database => {
      const database: Database = {
        kind: 'pglite',
        db,
        pglite,
        async query<T>(text: string, params: unknown[] = []) {
          return turns.run(priority, async () => (await pglite.query<T>(text, params)).rows);
        },
        async queryPrepared<T>(statement: PreparedStatement) {
          return turns.run(priority, async () => (await pglite.query<T>(statement.text, statement.values)).rows);
        },
        snapshot<T>(read: (tx: Queryable) => Promise<T>) {
          // One turn: no statement of this process runs between the checkpoint, `read` and the copy.
          return turns.run(priority, async () => {
            await pglite.exec('CHECKPOINT');
            const facts = await read({ query: async <R>(text: string, params: unknown[] = []) => (await pglite.query<R>(text, params)).rows });
            return { facts, archive: await pglite.dumpDataDir('gzip') };
          });
        },
        transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
          return turns.run(priority, () =>
            pglite.transaction((tx) =>
              work({
                async query<R>(text: string, params: unknown[] = []) {
                  return (await tx.query<R>(text, params)).rows;
                },
              }),
            ),
          );
        },
        close,
        background: () => (priority === BACKGROUND ? database : view(BACKGROUND, async () => undefined)),
      };
      return database;
    };
    return view(FOREGROUND, async () => {
      await pglite.close();
      lock?.release();
    });
  } catch (error) {
    lock?.release();
    throw error;
  }
}
