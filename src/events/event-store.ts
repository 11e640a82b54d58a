/**
 * Every statement on the events table, and the outbox. Durable events: An event is written in the same statement or transaction as the
 * state change that causes it, numbered per account 1, 2, 3 … without gaps (the account row's
 * event_seq, bumped under its row lock, so concurrent writers queue and a rolled-back change
 * leaves no hole), and queued for every active webhook endpoint that wants its type.
 */
import type { Database, Queryable } from '../platform/database.js';
import { AppError } from '../platform/errors.js';

import { EVENT_TYPES, type EventType } from './event-types.js';

export { EVENT_TYPES, type EventType };

export interface EventRecord {
  id: string;
  seq: number;
  type: EventType;
  timestamp: Date;
  data: Record<string, unknown>;
}

/**
 * SQL: CTEs that append the rows of CTE `source` (columns account_id text, type text, data
 * jsonb) as events and queue their webhook deliveries. `onlyEndpoint` (a SQL expression)
 * makes them test events for that one endpoint: they take no seq (the account's sequence is
 * what every endpoint and GET /events see, and a test seen by one endpoint would be a hole for
 * the others) and are not listed by GET /events. Append after a WITH list: the caller writes
 * `WITH <its CTEs>, ${appendEventsSql('src')} SELECT …`.
 */
export function appendEventsSql(source: string, onlyEndpoint?: string): string {
  const numbered = onlyEndpoint === undefined;
  return `
  ev_src AS (SELECT account_id, type, data, row_number() OVER () AS ord FROM ${source}),
  ${
    numbered
      ? `ev_counts AS (SELECT account_id, count(*)::bigint AS n FROM ev_src GROUP BY account_id),
  ev_bump AS (
    UPDATE accounts a SET event_seq = a.event_seq + c.n FROM ev_counts c WHERE a.id = c.account_id
    RETURNING a.id, a.event_seq - c.n AS base),
  ev_num AS (
    SELECT s.account_id, s.type, s.data, b.base + row_number() OVER (PARTITION BY s.account_id ORDER BY s.ord) AS seq
      FROM ev_src s JOIN ev_bump b ON b.id = s.account_id),
  ev_rows AS (SELECT account_id, type, data, seq, 'evt_' || substr(account_id, 5) || lpad(seq::text, 12, '0') AS id FROM ev_num),`
      : `ev_rows AS (
    SELECT s.account_id, s.type, s.data, NULL::bigint AS seq, 'evt_' || replace(gen_random_uuid()::text, '-', '') AS id FROM ev_src s),`
  }
  ev_ins AS (
    INSERT INTO events (id, account_id, seq, type, data)
    SELECT id, account_id, seq, type, data FROM ev_rows
    RETURNING id, account_id, type),
  ev_deliveries AS (
    INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, next_attempt_at)
    SELECT 'whd_' || substr(e.id, 5) || substr(w.id, 4), e.account_id, w.id, e.id, now()
      FROM ev_ins e JOIN webhook_endpoints w ON w.account_id = e.account_id
     WHERE ${numbered ? `w.active AND (cardinality(w.events) = 0 OR e.type = ANY(w.events))` : `w.id = ${onlyEndpoint}`}
    RETURNING ${numbered ? '1' : 'id'})`;
}

/** Appends events given as JSON from Node (for the rare paths that build them there); returns their ids. */
export async function appendEvents(tx: Queryable, items: { accountId: string; type: EventType; data: unknown }[], onlyEndpoint?: string): Promise<string[]> {
  if (items.length === 0) return [];
  const rows = await tx.query<{ id: string }>(
    `WITH src AS (SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS s(account_id, type, data)),
     ${appendEventsSql('src', onlyEndpoint ? '$4' : undefined)}
     SELECT id FROM ev_ins WHERE (SELECT count(*) FROM ev_deliveries) >= 0`,
    [items.map((i) => i.accountId), items.map((i) => i.type), items.map((i) => JSON.stringify(i.data)), ...(onlyEndpoint ? [onlyEndpoint] : [])],
  );
  return rows.map((row) => row.id);
}

/**
 * Appends a `webhook.test` event queued for `endpointId` only (see appendEventsSql); its id and
 * its delivery's, or undefined when the endpoint is gone (the caller then rolls the event back).
 */
export async function appendTestEvent(tx: Queryable, accountId: string, endpointId: string, data: unknown): Promise<{ eventId: string; deliveryId: string } | undefined> {
  const [row] = await tx.query<{ event_id: string; delivery_id: string }>(
    `WITH src AS (SELECT $1::text AS account_id, 'webhook.test'::text AS type, $2::jsonb AS data),
     ${appendEventsSql('src', '$3')}
     SELECT e.id AS event_id, d.id AS delivery_id FROM ev_ins e CROSS JOIN ev_deliveries d`,
    [accountId, JSON.stringify(data), endpointId],
  );
  return row && { eventId: row.event_id, deliveryId: row.delivery_id };
}

interface EventRow {
  id: string;
  seq: number;
  type: EventType;
  created_at: Date;
  data: Record<string, unknown>;
}

/** Up to `limit` numbered events of the account after `after` (a seq), oldest first. */
export async function listEventsAfter(db: Queryable, accountId: string, after: number, limit: number, type?: EventType): Promise<EventRecord[]> {
  const rows = await db.query<EventRow>(
    `SELECT id, seq, type, created_at, data FROM events
      WHERE account_id = $1 AND seq > $2 ${type ? 'AND type = $4' : ''}
      ORDER BY seq LIMIT $3`,
    type ? [accountId, after, limit, type] : [accountId, after, limit],
  );
  return rows.map((r) => ({ id: r.id, seq: Number(r.seq), type: r.type, timestamp: r.created_at, data: r.data }));
}

/** The seq of the account's newest event (0 before the first); undefined when there is no such account. */
export async function lastEventSeq(db: Queryable, accountId: string): Promise<number | undefined> {
  const [row] = await db.query<{ event_seq: number }>('SELECT event_seq FROM accounts WHERE id = $1', [accountId]);
  return row ? Number(row.event_seq) : undefined;
}

/**
 * Deletes about `batch` events older than `retentionDays` (their deliveries and attempts go with
 * them, by cascade); how many. What goes of an account's sequence is always a prefix: every
 * event up to the highest seq found expired, so the events kept stay gap-free even where two
 * transactions took their seqs in the other order than their timestamps. Test events (no seq)
 * go by age alone.
 */
export async function deleteExpiredEvents(db: Queryable, retentionDays: number, batch: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `WITH expired AS (
       SELECT ctid, account_id, seq FROM events WHERE created_at < now() - $1::int * interval '1 day' LIMIT $2),
     upto AS (SELECT account_id, max(seq) AS seq FROM expired WHERE seq IS NOT NULL GROUP BY account_id),
     tests AS (DELETE FROM events WHERE ctid IN (SELECT ctid FROM expired WHERE seq IS NULL) RETURNING 1),
     sequenced AS (DELETE FROM events e USING upto u WHERE e.account_id = u.account_id AND e.seq <= u.seq RETURNING 1)
     SELECT (SELECT count(*) FROM tests)::int + (SELECT count(*) FROM sequenced)::int AS n`,
    [retentionDays, batch],
  );
  return row?.n ?? 0;
}

export class EventService {
  constructor(private readonly database: Database) {}

  /** Events after `after` (a seq), oldest first, so a consumer can backfill a gap. Kept EVENT_RETENTION_DAYS. */
  async list(accountId: string, options: { after: number; limit: number; type?: EventType | undefined }): Promise<{ data: EventRecord[]; lastSeq: number }> {
    const limit = Math.min(Math.max(options.limit, 1), 1000);
    const data = await listEventsAfter(this.database, accountId, options.after, limit, options.type);
    const lastSeq = await lastEventSeq(this.database, accountId);
    if (lastSeq === undefined) throw new AppError('NOT_FOUND', 'Account not found');
    return { data, lastSeq };
  }
}
