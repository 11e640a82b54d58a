/**
 * Every statement on webhook_endpoints, webhook_deliveries and webhook_attempts, one named
 * function per operation. The API side (webhook-service.ts) and the delivery worker
 * (webhook-delivery.ts) hold no SQL. The one other writer is the outbox (event-store.ts,
 * appendEventsSql), which queues deliveries in the very statement that appends their events.
 *
 * Invariants every statement here keeps:
 * - The API's statements name the account (account_id) of what they touch; the two that go by id
 *   alone (findDelivery, findDeliveryOf) are called with ids just checked against the account.
 *   The worker serves every account and holds deliveries by lease (claimed_by, claimed_until).
 * - A delivery leaves the worker's hands only through CLEAR_CLAIM: recorded, requeued or
 *   released, its lease is dropped in the same write.
 * - The worker writes an outcome only while it still holds the claim (claimed_by = itself): a
 *   worker whose lease ran out and was taken over records nothing.
 */
import type { Queryable } from '../platform/database.js';
import type { ListingSource } from '../platform/listing.js';

export const DELIVERY_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** An endpoint's public columns (never its secrets). */
export interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  events: string[];
  active: boolean;
  disabled_reason: string | null;
  consecutive_failures: number;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface SecretRow {
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

export type EndpointWithSecretRow = EndpointRow & SecretRow;

/** A delivery with its event's type and seq: the one shape of a delivery the API reads. */
export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  event_seq: number | null;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
}

export interface AttemptRow {
  delivery_id: string;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/** A delivery claimed by the worker: what one attempt needs, in one row. */
export interface ClaimedRow extends SecretRow {
  id: string;
  /** Where the claim left the row (its ctid): its outcome updates it there while the claim holds. */
  address: string;
  endpoint_id: string;
  attempts: number;
  event_id: string;
  /** Null for webhook.test events. */
  seq: number | null;
  type: string;
  /** The event's data as JSON text (jsonb output), put in the body as it is: no parse and re-serialise per attempt. */
  data: string;
  created_at: Date;
  url: string;
}

/** The result of one attempt, as the worker records it. */
export interface OutcomeRecord {
  id: string;
  /** The delivery's address as claimed (ClaimedRow.address). */
  address: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  excerpt: string | null;
  attemptedAt: Date;
  /** The endpoint to turn off (it answered 410 Gone), or null. */
  gone: string | null;
}

export interface EndpointChanges {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  /** true also clears disabled_reason: an endpoint switched on again has no reason to be off. */
  active?: boolean | undefined;
}

const ENDPOINT_COLUMNS = 'id, account_id, url, description, events, active, disabled_reason, consecutive_failures, last_success_at, last_failure_at, created_at, updated_at';
const DELIVERY_COLUMNS = `d.id, d.event_id, e.type AS event_type, e.seq AS event_seq, d.status, d.attempts, d.next_attempt_at,
       d.last_status_code, d.last_error, d.created_at, d.delivered_at`;
/** Drops the worker's lease; part of every write that takes a delivery out of a worker's hands. */
const CLEAR_CLAIM = 'claimed_by = NULL, claimed_until = NULL';
/** Queues a delivery again, due now; its attempt count and history are kept. */
const REQUEUE = `status = 'PENDING', next_attempt_at = now(), ${CLEAR_CLAIM}`;

// ---- endpoints ----

/** Whether any endpoint is active, in any account (the worker skips its claims while none is). */
export async function anyActiveEndpoint(db: Queryable): Promise<boolean> {
  const [row] = await db.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE active) AS any');
  return row?.any ?? false;
}

export async function countActiveEndpoints(db: Queryable, accountId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1 AND active', [accountId]);
  return row?.n ?? 0;
}

/** The endpoint with its secrets. */
export async function findEndpoint(db: Queryable, accountId: string, id: string): Promise<EndpointWithSecretRow | undefined> {
  const [row] = await db.query<EndpointWithSecretRow>('SELECT * FROM webhook_endpoints WHERE id = $1 AND account_id = $2', [id, accountId]);
  return row;
}

/** Locks the endpoint row for a change; undefined when the account has no such endpoint. */
export async function lockEndpoint(db: Queryable, accountId: string, id: string): Promise<{ active: boolean } | undefined> {
  const [row] = await db.query<{ active: boolean }>('SELECT active FROM webhook_endpoints WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
  return row;
}

export async function insertEndpoint(
  db: Queryable,
  endpoint: { id: string; accountId: string; url: string; description: string | null; events: string[]; active: boolean; secret: string },
): Promise<EndpointRow> {
  const [row] = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, account_id, url, description, events, active, secret)
     VALUES ($1, $2, $3, $4, $5::text[], $6, $7) RETURNING ${ENDPOINT_COLUMNS}`,
    [endpoint.id, endpoint.accountId, endpoint.url, endpoint.description, endpoint.events, endpoint.active, endpoint.secret],
  );
  return row!;
}

/** A page of the account's endpoints, newest first, with the account's total. */
export async function listEndpoints(db: Queryable, accountId: string, limit: number, offset: number): Promise<{ rows: EndpointRow[]; total: number }> {
  const rows = await db.query<EndpointRow & { total: number }>(
    `SELECT ${ENDPOINT_COLUMNS}, count(*) OVER () AS total FROM webhook_endpoints WHERE account_id = $1
      ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
    [accountId, limit, offset],
  );
  if (rows[0]) return { rows, total: Number(rows[0].total) };
  // A page past the end has no row to carry the total.
  const [counted] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1', [accountId]);
  return { rows, total: counted?.n ?? 0 };
}

/** Applies the given changes (and updated_at); undefined when the account has no such endpoint. */
export async function updateEndpoint(db: Queryable, accountId: string, id: string, changes: EndpointChanges): Promise<EndpointRow | undefined> {
  const sets: string[] = ['updated_at = now()'];
  const params: unknown[] = [id, accountId];
  const set = (column: string, value: unknown, cast = ''): void => {
    params.push(value);
    sets.push(`${column} = $${params.length}${cast}`);
  };
  if (changes.url !== undefined) set('url', changes.url);
  if (changes.events !== undefined) set('events', changes.events, '::text[]');
  if (changes.description !== undefined) set('description', changes.description);
  if (changes.active !== undefined) {
    set('active', changes.active);
    if (changes.active) sets.push('disabled_reason = NULL');
  }
  const [row] = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = $1 AND account_id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
    params,
  );
  return row;
}

/** Deletes the endpoint; its deliveries and their attempts go with it (cascade). Whether it existed. */
export async function deleteEndpoint(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2 RETURNING id', [id, accountId]);
  return rows.length > 0;
}

/** `secret` becomes the current secret; the current one signs on as the previous one for `previousTtlMs`. */
export async function rotateEndpointSecret(db: Queryable, accountId: string, id: string, secret: string, previousTtlMs: number): Promise<SecretRow | undefined> {
  const [row] = await db.query<SecretRow>(
    `UPDATE webhook_endpoints
        SET previous_secret = secret, previous_secret_expires_at = now() + $3::int * interval '1 millisecond',
            secret = $4, updated_at = now()
      WHERE id = $1 AND account_id = $2
      RETURNING secret, previous_secret, previous_secret_expires_at`,
    [id, accountId, previousTtlMs, secret],
  );
  return row;
}

// ---- deliveries, as the API sees them ----

/** The delivery the outbox queued for `eventId` to `endpointId`, if any. */
export async function findDeliveryOf(db: Queryable, eventId: string, endpointId: string): Promise<string | undefined> {
  const [row] = await db.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2', [eventId, endpointId]);
  return row?.id;
}

export async function findDelivery(db: Queryable, deliveryId: string): Promise<DeliveryRow | undefined> {
  const [row] = await db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1`, [
    deliveryId,
  ]);
  return row;
}

export async function deliveryStatus(db: Queryable, accountId: string, endpointId: string, deliveryId: string): Promise<DeliveryStatus | undefined> {
  const [row] = await db.query<{ status: DeliveryStatus }>('SELECT status FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 AND account_id = $3', [
    deliveryId,
    endpointId,
    accountId,
  ]);
  return row?.status;
}

/**
 * The endpoint's deliveries (optionally of one status) for the Lister: newest first, as
 * DeliveryRow. FAILED has an index of its own in that order (webhook_deliveries_failed_idx);
 * the other statuses are sparse filters.
 */
export function deliveryListing(accountId: string, endpointId: string, status?: DeliveryStatus): ListingSource {
  const where = ['d.endpoint_id = $1', 'd.account_id = $2'];
  const params: unknown[] = [endpointId, accountId];
  if (status) params.push(status);
  const byStatus = status ? ['d.status = $3'] : [];
  return {
    kind: 'webhook-deliveries',
    table: 'webhook_deliveries d',
    alias: 'd',
    where: status === 'FAILED' ? [...where, ...byStatus] : where,
    sparse: status === 'FAILED' ? [] : byStatus,
    params,
    decorate: (page) => `SELECT ${DELIVERY_COLUMNS} FROM ${page} JOIN events e ON e.id = d.event_id ORDER BY d.created_at DESC NULLS LAST, d.id DESC NULLS LAST`,
  };
}

/**
 * Deletes up to `batch` delivery attempts older than `retentionDays` (the delivery keeps its
 * status and counts); how many. Attempt ids grow with time, so the oldest are found first along
 * the primary key.
 */
export async function deleteExpiredAttempts(db: Queryable, retentionDays: number, batch: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM webhook_attempts WHERE id IN (
         SELECT id FROM webhook_attempts WHERE attempted_at < now() - $1::int * interval '1 day' ORDER BY id LIMIT $2)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [retentionDays, batch],
  );
  return row?.n ?? 0;
}

/** Up to `perDelivery` newest attempts of each delivery, newest first. */
export async function latestAttempts(db: Queryable, deliveryIds: string[], perDelivery: number): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db.query<AttemptRow>(
    `SELECT a.delivery_id, a.attempted_at, a.status_code, a.latency_ms, a.response_excerpt, a.error
       FROM unnest($1::text[]) AS p(id)
       CROSS JOIN LATERAL (
         SELECT * FROM webhook_attempts w WHERE w.delivery_id = p.id ORDER BY w.attempted_at DESC, w.id DESC LIMIT $2
       ) a
      ORDER BY a.attempted_at DESC, a.id DESC`,
    [deliveryIds, perDelivery],
  );
}

/** Requeues one delivery that is not PENDING; whether it did. */
export async function requeueDelivery(db: Queryable, accountId: string, endpointId: string, deliveryId: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE webhook_deliveries SET ${REQUEUE} WHERE id = $1 AND endpoint_id = $2 AND account_id = $3 AND status <> 'PENDING' RETURNING id`,
    [deliveryId, endpointId, accountId],
  );
  return rows.length > 0;
}

/** Requeues every FAILED delivery of the endpoint created at or after `since`; how many. */
export async function requeueFailedSince(db: Queryable, accountId: string, endpointId: string, since: Date): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `WITH requeued AS (
       UPDATE webhook_deliveries SET ${REQUEUE}
        WHERE endpoint_id = $1 AND account_id = $2 AND status = 'FAILED' AND created_at >= $3
       RETURNING 1)
     SELECT count(*)::int AS n FROM requeued`,
    [endpointId, accountId, since],
  );
  return row?.n ?? 0;
}

// ---- deliveries, as the worker works them ----

export interface ClaimRequest {
  workerId: string;
  /** Most deliveries to claim in all. */
  limit: number;
  /** Most deliveries per endpoint held by the worker at once (in flight, or claimed and waiting for a slot). */
  perEndpoint: number;
  /**
   * More an endpoint whose last attempt did not fail may hold, claimed ahead so that its requests
   * never wait for a claim statement; an endpoint failing gets none (what it holds waits long).
   */
  prefetch?: number;
  /** Deliveries each endpoint holds now (endpoint id → count). */
  inFlight: ReadonlyMap<string, number>;
  leaseMs: number;
}

/**
 * The due deliveries of one endpoint (eps.id), of one kind, oldest due first, up to its room,
 * locked, with the address (ctid) each was locked at: a locked row is the newest version and
 * cannot move until the claim's transaction ends, so the claim updates it there, a TID scan.
 */
const dueOf = (attempts: string): string =>
  `SELECT ctid AS address FROM webhook_deliveries
    WHERE endpoint_id = eps.id AND status = 'PENDING' AND ${attempts} AND next_attempt_at <= now()
      AND (claimed_until IS NULL OR claimed_until < now())
    ORDER BY next_attempt_at LIMIT eps.room FOR UPDATE SKIP LOCKED`;

/**
 * Leases up to `limit` due deliveries of active endpoints, each endpoint as many as it has room for
 * (perEndpoint, plus prefetch while its last attempt did not fail, minus what the worker holds),
 * taking its first attempts and its retries in turn, so a fresh event never waits behind the
 * endpoint's backlog of retries. No plan of it reads more of
 * the deliveries, events or endpoints than the rows it claims, whatever their statistics: the
 * claimed rows are updated by address, and each one's event and endpoint are key look-ups of
 * their own (LATERAL, OFFSET 0: not merged into joins). Joined, on the statistics of a delivery
 * log analysed with pages and no rows (pruned, then autovacuum), the update hashed the whole table
 * for each claim.
 */
export async function claimDue(db: Queryable, request: ClaimRequest): Promise<ClaimedRow[]> {
  const held = [...request.inFlight];
  return db.query<ClaimedRow>(
    `WITH eps AS (
       SELECT id, room FROM (
         SELECT w.id, $3 + CASE WHEN w.consecutive_failures = 0 THEN $7 ELSE 0 END - COALESCE(f.n, 0) AS room FROM webhook_endpoints w
           LEFT JOIN unnest($2::text[], $6::int[]) AS f(id, n) ON f.id = w.id
          WHERE w.active) r
        WHERE room > 0),
     picked AS (
       SELECT d.address FROM eps CROSS JOIN LATERAL (
         SELECT address FROM (
           SELECT address, row_number() OVER () AS turn FROM (${dueOf('attempts = 0')}) fresh
           UNION ALL
           SELECT address, row_number() OVER () AS turn FROM (${dueOf('attempts > 0')}) retry) both_kinds
          ORDER BY turn LIMIT eps.room) AS d
       LIMIT $4),
     claimed AS (
       UPDATE webhook_deliveries d SET claimed_by = $1, claimed_until = now() + $5 * interval '1 millisecond'
        WHERE d.ctid = ANY (ARRAY(SELECT address FROM picked))
       RETURNING d.id, d.ctid::text AS address, d.endpoint_id, d.attempts, d.event_id)
     SELECT c.id, c.address, c.endpoint_id, c.attempts, e.id AS event_id, e.seq, e.type, e.data::text AS data, e.created_at,
            w.url, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM claimed c
      CROSS JOIN LATERAL (SELECT e.id, e.seq, e.type, e.data, e.created_at FROM events e WHERE e.id = c.event_id OFFSET 0) AS e
      CROSS JOIN LATERAL (SELECT w.url, w.secret, w.previous_secret, w.previous_secret_expires_at FROM webhook_endpoints w WHERE w.id = c.endpoint_id OFFSET 0) AS w`,
    [request.workerId, held.map(([id]) => id), request.perEndpoint, request.limit, request.leaseMs, held.map(([, n]) => n), request.prefetch ?? 0],
  );
}

/**
 * Records a batch of outcomes in one statement: each delivery's new state (only while this worker
 * still holds its claim), its attempt, and each endpoint's health (failed attempts since the last
 * success, the last success and failure), turning off those that answered 410 Gone. The endpoint
 * rows are locked in id order, so batches recorded at once by several workers never deadlock.
 *
 * Each delivery is updated at the address its claim left it (a TID scan), with no look-up:
 * joined by id, on a delivery log analysed with pages and no rows (which the planner takes for
 * one row however many it holds), the update walked the whole table, and a key look-up of its own
 * could be served by any index that holds the id. While the claim holds, nothing else updates the
 * row; a row claimed since by another worker has moved, and the version at the old address is no
 * longer visible, so it is not updated (nor is another row that took that address: its id
 * differs). That id check compares an expression of the id (`d.id || ''`) that no index holds:
 * an id comparison an index could serve made a walk of the primary key a way to the rows again.
 * A rewrite of the table in between (VACUUM FULL) moves every row: those outcomes are then not
 * recorded, the claims run out, and the deliveries are sent again (at least once, as ever).
 */
export async function recordOutcomes(db: Queryable, workerId: string, batch: OutcomeRecord[]): Promise<void> {
  await db.query(
    `WITH o AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::text[], $7::int[], $8::text[], $9::timestamptz[], $12::tid[])
         AS o(id, status, attempts, next_attempt_at, status_code, error, latency_ms, excerpt, attempted_at, address)),
     upd AS (
       UPDATE webhook_deliveries d SET status = o.status, attempts = o.attempts, next_attempt_at = o.next_attempt_at,
              last_status_code = o.status_code, last_error = CASE WHEN o.status = 'SUCCEEDED' THEN NULL ELSE o.error END,
              delivered_at = CASE WHEN o.status = 'SUCCEEDED' THEN o.attempted_at ELSE d.delivered_at END,
              ${CLEAR_CLAIM}
         FROM o WHERE d.ctid = ANY ($12::tid[]) AND d.ctid = o.address AND d.id || '' = o.id AND d.claimed_by = $10
       RETURNING d.id, d.endpoint_id),
     attempts AS (
       INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_excerpt, error)
       SELECT o.id, o.attempted_at, o.status_code, o.latency_ms, o.excerpt, o.error FROM o JOIN upd ON upd.id = o.id
       RETURNING 1),
     tried AS (SELECT upd.endpoint_id, o.status, o.attempted_at FROM o JOIN upd ON upd.id = o.id),
     latest AS (
       SELECT endpoint_id, max(attempted_at) FILTER (WHERE status = 'SUCCEEDED') AS success_at, max(attempted_at) FILTER (WHERE status <> 'SUCCEEDED') AS failure_at
         FROM tried GROUP BY endpoint_id),
     health AS (
       SELECT l.*, (SELECT count(*)::int FROM tried t WHERE t.endpoint_id = l.endpoint_id AND t.status <> 'SUCCEEDED' AND (l.success_at IS NULL OR t.attempted_at > l.success_at)) AS failures_after
         FROM latest l),
     locked AS (
       SELECT w.id FROM webhook_endpoints w
        WHERE w.id IN (SELECT endpoint_id FROM health) OR w.id = ANY($11::text[])
        ORDER BY w.id FOR NO KEY UPDATE),
     endpoints AS (
       UPDATE webhook_endpoints w
          SET consecutive_failures = CASE WHEN h.endpoint_id IS NULL THEN w.consecutive_failures
                                          WHEN h.success_at IS NULL THEN w.consecutive_failures + h.failures_after ELSE h.failures_after END,
              last_success_at = GREATEST(w.last_success_at, h.success_at),
              last_failure_at = GREATEST(w.last_failure_at, h.failure_at),
              active = w.active AND w.id <> ALL($11::text[]),
              disabled_reason = CASE WHEN w.active AND w.id = ANY($11::text[])
                                     THEN 'The endpoint answered 410 Gone at ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                                     ELSE w.disabled_reason END,
              updated_at = CASE WHEN w.active AND w.id = ANY($11::text[]) THEN now() ELSE w.updated_at END
         FROM locked k LEFT JOIN health h ON h.endpoint_id = k.id
        WHERE w.id = k.id
       RETURNING w.id)
     SELECT (SELECT count(*) FROM upd) AS updated`,
    [
      batch.map((o) => o.id),
      batch.map((o) => o.status),
      batch.map((o) => o.attempts),
      batch.map((o) => o.nextAttemptAt),
      batch.map((o) => o.statusCode),
      batch.map((o) => o.error),
      batch.map((o) => o.latencyMs),
      batch.map((o) => o.excerpt),
      batch.map((o) => o.attemptedAt),
      workerId,
      [...new Set(batch.map((o) => o.gone).filter((id): id is string => id !== null))],
      batch.map((o) => o.address),
    ],
  );
}

/** Gives claims back unrecorded (requests abandoned on stop), so the next worker sends them at once. */
export async function releaseClaims(db: Queryable, workerId: string, deliveryIds: string[]): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET ${CLEAR_CLAIM} WHERE id = ANY($1::text[]) AND claimed_by = $2`, [deliveryIds, workerId]);
}

/** Deliveries waiting (PENDING), for the backlog gauge: counted on the partial indexes of pending rows. */
export async function countPendingDeliveries(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'PENDING'`);
  return row?.n ?? 0;
}
