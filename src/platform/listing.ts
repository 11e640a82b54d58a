/**
 * Listings of tables that grow without bound (messages, bulk jobs, webhook deliveries): newest
 * first by (created_at, id), answered in bounded time at any size.
 *
 * - Rows. `page` skips (page - 1) × limit rows along an index that serves the order, so page n
 *   costs n pages of index entries, never a sort or a scan of the table. `cursor` (the
 *   `meta.nextCursor` of an earlier answer) continues after that answer's last row by keyset, at
 *   the cost of one page at any depth; a walk by cursor returns every row that existed when it
 *   began exactly once, in order, whatever is inserted meanwhile (new rows are newer than any
 *   cursor and sort before it).
 * - Total. Counted exactly up to the count cap (LISTING_COUNT_CAP); past it, counting stops,
 *   `total` is the cap and `totalExact` is false: "at least `total`".
 * - Sparse filters (conditions no index serves in the listing's order, e.g. a message status) are
 *   checked on at most the scan cap's rows (LISTING_SCAN_CAP) of that order per answer, and per
 *   count: a value that almost never occurs costs the cap, not the table. A page whose scan ended
 *   at the cap may hold fewer rows than `limit` (even none); its `nextCursor` continues after the
 *   last row it read, and its total is "at least".
 *
 * A cursor is opaque to clients: base64url of [listing, page, createdAt in ms, id]; every listed
 * table's created_at is timestamp(3), so milliseconds carry the position exactly. It carries a
 * position, never a permission: every query still filters by the caller's account, so another
 * account's cursor only positions the walk within the caller's own rows.
 */
import type { Database } from './database.js';
import { validationError } from './errors.js';
import { MAX_PAGE_SIZE } from '../directory/contacts.js';

export interface ListingMeta {
  total: number;
  totalExact: boolean;
  page: number;
  limit: number;
  nextCursor: string | null;
}

export interface Listing<T> {
  data: T[];
  meta: ListingMeta;
}

export interface ListingRequest {
  page: number;
  limit: number;
  cursor?: string | undefined;
}

/** Listings whose cursors are told apart: one listing's cursor is refused by another. */
export type ListingKind = 'messages' | 'bulk-jobs' | 'webhook-deliveries';

export interface ListingSource {
  kind: ListingKind;
  /** The listed table with its alias, e.g. `webhook_deliveries d`. */
  table: string;
  /** The table's alias: its `created_at` and `id` are the order and the cursor's position. */
  alias: string;
  /** The page's columns (default: all of the table's); they must include created_at and id. */
  columns?: string;
  /** Conditions on the table (ANDed), with placeholders $1..$n for `params`. */
  where: string[];
  params: unknown[];
  /**
   * Conditions (ANDed, placeholders into `params` too) on the rows `where` finds, in order, that
   * no index serves: each answer and each count checks them on at most the scan cap's rows.
   */
  sparse?: string[];
  /**
   * Turns the page (a subquery over the table's columns, in order) into the answer's rows; it
   * must keep the order. Joins go here, so they run for the page's rows only.
   */
  decorate?: (page: string) => string;
}

interface Position {
  page: number;
  createdAt: Date;
  id: string;
}

const MAX_PAGE = 2_147_483_647;
/** created_at of any row is after 1970 and before the year 275760 (where a JavaScript Date ends). */
const MAX_TIME_MS = 8_640_000_000_000_000;
const ID_PATTERN = /^[A-Za-z0-9_-]{1,100}$/;

function encodeCursor(kind: ListingKind, position: Position): string {
  return Buffer.from(JSON.stringify([kind, position.page, position.createdAt.getTime(), position.id])).toString('base64url');
}

/** Reads a client's cursor; anything but a cursor this listing gave out is a 400 on `cursor`. */
function decodeCursor(kind: ListingKind, cursor: string): Position {
  const refuse = (why: string) => validationError('cursor', `${why}; pass meta.nextCursor of an earlier answer unchanged`);
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw refuse('is not a cursor');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw refuse('is not a cursor');
  }
  if (!Array.isArray(value) || value.length !== 4) throw refuse('is not a cursor');
  const [cursorKind, page, ms, id] = value as unknown[];
  if (typeof cursorKind !== 'string' || typeof page !== 'number' || typeof ms !== 'number' || typeof id !== 'string') throw refuse('is not a cursor');
  if (cursorKind !== kind) throw refuse('belongs to another listing');
  if (!Number.isInteger(page) || page < 2 || page > MAX_PAGE || !Number.isInteger(ms) || ms < 0 || ms > MAX_TIME_MS || !ID_PATTERN.test(id)) {
    throw refuse('is not a cursor');
  }
  return { page, createdAt: new Date(ms), id };
}

export class Lister {
  /**
   * countCap: the most rows a total counts before it stops and says "at least"; scanCap: the most
   * rows of the listing's order that a sparse filter is checked on, per answer and per count.
   */
  constructor(
    private readonly database: Database,
    readonly countCap: number,
    readonly scanCap: number,
  ) {}

  async list<Row extends { created_at: Date; id: string }>(source: ListingSource, request: ListingRequest): Promise<Listing<Row>> {
    const limit = Math.min(request.limit, MAX_PAGE_SIZE);
    const after = request.cursor === undefined ? undefined : decodeCursor(source.kind, request.cursor);
    const page = after?.page ?? request.page;
    const offset = after ? 0 : (page - 1) * limit;
    const { alias } = source;
    const sparse = source.sparse ?? [];
    const params = [...source.params];
    const next = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const keyset = after ? ` AND (${alias}.created_at, ${alias}.id) < (${next(after.createdAt)}::timestamptz, ${next(after.id)}::text)` : '';
    const scanned = `${source.table} WHERE ${source.where.join(' AND ')}${keyset}`;
    const scannedParams = [...params];
    const from = sparse.length > 0 ? `${this.scanWindow(scanned, alias)} WHERE ${sparse.join(' AND ')}` : scanned;
    // One row beyond the page says whether there is a next one.
    const pageSql = `SELECT ${source.columns ?? `${alias}.*`} FROM ${from} ORDER BY ${ORDER(alias)} LIMIT ${next(limit + 1)} OFFSET ${next(offset)}`;
    const rows = await this.database.query<Row>(source.decorate ? source.decorate(`(${pageSql}) AS ${alias}`) : pageSql, params);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    // A page that is not full ended its listing, unless its scan stopped at the cap first.
    const edge = more || sparse.length === 0 ? undefined : await this.scanEdge(scanned, alias, sparse, scannedParams);
    const last = more ? rows.at(-1) : edge;
    const nextCursor = last ? encodeCursor(source.kind, { page: Math.min(page + 1, MAX_PAGE), createdAt: last.created_at, id: last.id }) : null;
    // An offset page that ends the listing knows the total without counting; one whose scan
    // stopped at the cap knows what counting that same first scan would find: "at least".
    const known = !after && !more && (rows.length > 0 || page === 1) ? offset + rows.length : undefined;
    const { total, totalExact } = known !== undefined ? { total: known, totalExact: !edge } : await this.count(source);
    return { data: rows, meta: { total, totalExact, page, limit, nextCursor } };
  }

  /** SQL: the rows a sparse filter is checked on, the first scanCap of `scanned` in the order, as the table's alias. */
  private scanWindow(scanned: string, alias: string): string {
    return `(SELECT ${alias}.* FROM ${scanned} ORDER BY ${ORDER(alias)} LIMIT ${this.scanCap}) AS ${alias}`;
  }

  /** Where a sparse filter's scan stopped, if it stopped at the cap: the last row it read. */
  private async scanEdge(scanned: string, alias: string, sparse: string[], params: unknown[]): Promise<{ created_at: Date; id: string } | undefined> {
    // The filter is selected only so that the statement takes the same parameters as the page's.
    const [row] = await this.database.query<{ created_at: Date; id: string }>(
      `SELECT ${alias}.created_at, ${alias}.id, (${sparse.join(' AND ')}) AS matched FROM ${scanned} ORDER BY ${ORDER(alias)} LIMIT 1 OFFSET ${this.scanCap - 1}`,
      params,
    );
    return row;
  }

  /**
   * Counts the filtered rows, stopping at countCap + 1: a cost bounded by the cap. A sparse
   * filter is counted on the listing's first scanCap rows; past them the total is "at least".
   */
  private async count(source: ListingSource): Promise<{ total: number; totalExact: boolean }> {
    const { alias } = source;
    const where = source.where.join(' AND ');
    const sparse = source.sparse ?? [];
    const sql =
      sparse.length > 0
        ? `SELECT count(*) FILTER (WHERE ${sparse.join(' AND ')})::int AS n, count(*)::int AS scanned
             FROM ${this.scanWindow(`${source.table} WHERE ${where}`, alias)}`
        : `SELECT count(*)::int AS n, 0 AS scanned FROM (SELECT 1 FROM ${source.table} WHERE ${where} LIMIT ${this.countCap + 1}) AS capped`;
    const [row] = await this.database.query<{ n: number; scanned: number }>(sql, source.params);
    const n = row?.n ?? 0;
    if (n > this.countCap) return { total: this.countCap, totalExact: false };
    return { total: n, totalExact: sparse.length === 0 || (row?.scanned ?? 0) < this.scanCap };
  }
}

/** SQL: the order of every listing, newest first. */
const ORDER = (alias: string): string => `${alias}.created_at DESC NULLS LAST, ${alias}.id DESC NULLS LAST`;
