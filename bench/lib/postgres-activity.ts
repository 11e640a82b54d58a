/**
 * What the PostgreSQL server did over a span of a benchmark: the WAL it wrote, the checkpoints it
 * began, and the buffers its backends wrote out themselves (for want of clean ones in
 * shared_buffers). Server-wide counters, differenced, so run on an otherwise quiet server. A job
 * that writes more WAL than max_wal_size lets pass between checkpoints begins one, and each page
 * it first touches after that is written to the WAL whole: the reason two runs of the same job
 * can differ.
 */

export interface PostgresActivity {
  walBytes: number;
  checkpoints: number;
  backendWrites: number;
}

/** Runs one statement and returns its rows (node-postgres' client and the Database both fit). */
export type Probe = (text: string) => Promise<Record<string, unknown>[]>;

/** The statement that reads the counters: pg_stat_bgwriter's, or pg_stat_checkpointer's and pg_stat_io's since PostgreSQL 17. */
async function countersSql(probe: Probe): Promise<string> {
  const [version] = await probe(`SELECT current_setting('server_version_num')::int AS v`);
  return Number(version!.v) >= 170_000
    ? `SELECT pg_current_wal_lsn()::text AS lsn,
              (SELECT num_timed + num_requested FROM pg_stat_checkpointer)::text AS checkpoints,
              (SELECT COALESCE(sum(writes), 0) FROM pg_stat_io WHERE backend_type = 'client backend')::text AS backend_writes`
    : `SELECT pg_current_wal_lsn()::text AS lsn, (checkpoints_timed + checkpoints_req)::text AS checkpoints,
              buffers_backend::text AS backend_writes FROM pg_stat_bgwriter`;
}

async function read(probe: Probe, sql: string): Promise<PostgresActivity> {
  const [row] = await probe(sql);
  const [high, low] = String(row!.lsn).split('/');
  return {
    walBytes: Number((BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)),
    checkpoints: Number(row!.checkpoints),
    backendWrites: Number(row!.backend_writes),
  };
}

/** Starts watching; the returned function ends the span and tells what happened in it. */
export async function watchPostgres(probe: Probe): Promise<() => Promise<PostgresActivity>> {
  const sql = await countersSql(probe);
  const start = await read(probe, sql);
  return async () => {
    const end = await read(probe, sql);
    return {
      walBytes: end.walBytes - start.walBytes,
      checkpoints: end.checkpoints - start.checkpoints,
      backendWrites: end.backendWrites - start.backendWrites,
    };
  };
}

/** "564 MB of WAL (5.6 kB a message); 1 checkpoint begun; backends wrote 1,093 MB" for `items` items. */
export function describeActivity(activity: PostgresActivity, items: number, item: string): string {
  const mb = (bytes: number): string => `${Math.round(bytes / 1e6).toLocaleString('en')} MB`;
  return (
    `${mb(activity.walBytes)} of WAL (${(activity.walBytes / items / 1000).toFixed(1)} kB a ${item}); ` +
    `${activity.checkpoints} checkpoint${activity.checkpoints === 1 ? '' : 's'} begun; backends wrote ${mb(activity.backendWrites * 8192)}`
  );
}
