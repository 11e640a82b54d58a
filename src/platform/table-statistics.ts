/**
 * A table whose statistics say it holds fewer rows than one statement just added to it is
 * analysed in that statement's transaction. Plans kept per connection (genericPlan statements,
 * PL/pgSQL functions' queries, named statements once PostgreSQL settles on a generic plan) are
 * costed on the statistics of the moment they are made. A database analysed while a table was
 * empty (autovacuum on a new install, or an operator's ANALYZE) shows that table as one row, and
 * then every index of it costs the same: a claim planned so looked its messages up by an index
 * that has the id last, reading the whole index for each (a 100,000-recipient job ran at 66
 * messages a second, claims of 16 to 65 s). ANALYZE gives the planner the table's real size and
 * makes every connection plan again the statements that use it. In the same transaction it counts
 * the rows just added, and the other connections learn of it as they see those rows: none can
 * run a kept plan on them.
 *
 * Statistics of at least one such batch are not degenerate: the planner scales them to the
 * table's current size by its pages, so a table that merely grew is left to autovacuum. PGlite
 * has no autovacuum: its tables stay unanalysed (reltuples -1, sized from their pages alone), and
 * this never analyses there.
 */
import type { Queryable } from './database.js';

/** The tables Waygate grows by large batches: messages by a job's fan-out, contacts by an import. */
export type GrowingTable = 'messages' | 'contacts';

/**
 * In the transaction that added `added` rows to `table`: analyses it if its statistics say it
 * holds fewer, unless another connection is analysing it (SKIP_LOCKED; autovacuum, say). What it
 * found: 'fresh' statistics, or 'analysed', or 'skipped' (stale, and another was analysing it).
 */
export async function analyseIfStale(tx: Queryable, table: GrowingTable, added: number): Promise<'fresh' | 'analysed' | 'skipped'> {
  // reltuples is -1 until the table is first analysed (or vacuumed); ANALYZE writes it in place,
  // so this transaction reads the new value at once.
  const stale = async (): Promise<boolean> =>
    (await tx.query<{ stale: boolean }>(`SELECT reltuples >= 0 AND reltuples < $2 AS stale FROM pg_class WHERE oid = $1::regclass`, [table, added]))[0]?.stale ?? false;
  if (!(await stale())) return 'fresh';
  await tx.query(`ANALYZE (SKIP_LOCKED) ${table}`);
  return (await stale()) ? 'skipped' : 'analysed';
}
