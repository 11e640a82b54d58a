/**
 * What a statement costs, run under EXPLAIN (ANALYZE, BUFFERS) (so it does run): the pages it
 * touches (at most), its functions' queries included, and the rows its plan's nodes produced or filtered out
 * (a join that compares every row of a table with every id shows here as their product). The rows
 * are the same on every run, unlike a time; the pages nearly so.
 */
import pg from 'pg';
// @ts-expect-error: node-postgres' own conversion of a parameter to its text, untyped.
import { prepareValue } from 'pg/lib/utils.js';
import { GENERIC_PLAN_SETTINGS, type Database, type PreparedStatement, type Queryable } from '../src/platform/database.js';

interface PlanNode {
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  'Local Hit Blocks'?: number;
  'Local Read Blocks'?: number;
  'Subplan Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

export interface PlanCost {
  pages: number;
  rows: number;
  /**
   * By table, the rows its scans returned or filtered out: what the statement read of it, apart
   * from what its joins do in memory with the rows read.
   */
  scanned: Record<string, number>;
}

export async function costOf(db: Pick<Queryable, 'query'>, text: string, values: unknown[]): Promise<PlanCost> {
  // The pages count the catalog pages a connection reads to fill its caches too, which other
  // databases' DDL on the same server (other test files) can empty at any time. Planned once
  // first (on the same connection, where `db` is one), the statement finds most of them filled;
  // bounds on pages still leave room for the rest. The plan rows are exact.
  await db.query(`EXPLAIN ${text}`, values);
  const [row] = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
  const plan = row!['QUERY PLAN'];

  const top = (typeof plan === 'string' ? (JSON.parse(plan) as [{ Plan: PlanNode }]) : plan)[0].Plan;
  // EXPLAIN gives a node's rows and removed rows per loop.
  const rows = (node: PlanNode): number =>
    (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Join Filter'] ?? 0)) * node['Actual Loops'] +
    (node.Plans ?? []).reduce((sum, child) => sum + rows(child), 0);
  const pages = (node: PlanNode): number => node['Shared Hit Blocks'] + node['Shared Read Blocks'] + (node['Local Hit Blocks'] ?? 0) + (node['Local Read Blocks'] ?? 0);
  // A data-modifying CTE the main query does not read runs after it, outside its count: each CTE
  // is added (one another reads is then counted twice, so this is a bound from above).
  const ctes = (top.Plans ?? []).filter((child) => child['Subplan Name']?.startsWith('CTE '));
  const scanned: Record<string, number> = {};
  const scans = (node: PlanNode): void => {
    const table = node['Relation Name'];
    // A ModifyTable node names its table too; its rows are the scans' below it.
    if (table && !('Operation' in node)) scanned[table] = (scanned[table] ?? 0) + (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'];
    for (const child of node.Plans ?? []) scans(child);
  };
  scans(top);
  return { pages: pages(top) + ctes.reduce((sum, cte) => sum + pages(cte), 0), rows: rows(top), scanned };
}

/**
 * `EXECUTE name(…)` of a prepared statement with `values`. A utility statement takes no
 * parameters: the values go in as literals, as node-postgres sends them.
 */
export function executeSql(name: string, values: unknown[]): string {
  const args = values.map((value) => (value === null || value === undefined ? 'NULL' : pg.escapeLiteral(String(prepareValue(value)))));
  return `EXECUTE ${name}(${args.join(', ')})`;
}

/** GENERIC_PLAN_SETTINGS as `SET LOCAL` statements. */
const GENERIC_SETTINGS = [...GENERIC_PLAN_SETTINGS.matchAll(/-c (\w+)=(\w+)/g)].map(([, key, value]) => `SET LOCAL ${key} = ${value}`);

let explainedStatements = 0;

/**
 * costOf for a genericPlan statement, with the plan its connections make: prepared and planned
 * under GENERIC_PLAN_SETTINGS on the statistics of the moment, then run under EXPLAIN, in one
 * transaction (so on one connection). A prepared statement outlives a rolled-back transaction on
 * its connection, so each has a name of its own: one left behind by a failed run is in no later
 * one's way.
 */
export async function genericCostOf(db: Pick<Database, 'transaction'>, statement: Pick<PreparedStatement, 'text' | 'values'>): Promise<PlanCost> {
  const name = `explained_generic_${++explainedStatements}`;
  return db.transaction(async (tx) => {
    for (const setting of GENERIC_SETTINGS) await tx.query(setting);
    await tx.query(`PREPARE ${name} AS ${statement.text}`);
    const cost = await costOf(tx, executeSql(name, statement.values), []);
    await tx.query(`DEALLOCATE ${name}`);
    return cost;
  });
}

/**
 * A stand-in for a database that runs each statement it is given under costOf on `db` instead
 * (so the statement does run; a genericPlan statement with its generic plan, genericCostOf) and
 * returns no rows; `cost` is the last statement's. `generic`: every named statement with a generic
 * plan, the plan PostgreSQL may keep for one after five runs (when it looks no dearer than the
 * custom plans it made).
 */
export interface Explaining extends Queryable, Pick<Database, 'queryPrepared'> {
  cost: PlanCost;
}

export function explaining(db: Pick<Database, 'query' | 'transaction'>, options: { generic?: boolean } = {}): Explaining {
  const self: Explaining = {
    cost: { pages: 0, rows: 0, scanned: {} },
    async query<T>(text: string, values: unknown[] = []): Promise<T[]> {
      self.cost = await costOf(db, text, values);
      return [];
    },
    async queryPrepared<T>(statement: PreparedStatement): Promise<T[]> {
      self.cost = statement.genericPlan || options.generic ? await genericCostOf(db, statement) : await costOf(db, statement.text, statement.values);
      return [];
    },
  };
  return self;
}
