/**
 * Where a direct send is accepted: its device chosen (device-choice.ts), its account's quota
 * reserved (quota-store.ts), its messages inserted (message-store.ts), all in one statement, so
 * one implicit transaction holds the account's usage row only for its own duration. Concurrent
 * direct sends are accepted together (DirectAccepts): one statement, one commit for many.
 */
import type { Database, PreparedStatement } from '../platform/database.js';
import { BatchPump } from '../platform/batch-pump.js';
import { DEVICE_CHOICE_SQL } from '../devices/device-choice.js';
import type { MessageType } from '../network/network.js';
import type { KindPayload, MessageStatus } from './message-model.js';
import type { DirectWorker } from './dispatch.js';
import { INSERT_DIRECT_SQL } from './message-store.js';
import { countsAgainstQuota, PERIODS_SQL, RESERVE_SQL, type Period } from './quota-store.js';

/** A direct send to accept: its messages' ids, recipients and network ids, index by index. */
export interface AcceptRequest {
  accountId: string;
  deviceId: string | null;
  type: MessageType;
  content: string;
  mediaUrl: string | null;
  payload: KindPayload | null;
  replyTo: string | null;
  mentions: string[] | null;
  status: MessageStatus;
  dueAt: Date;
  scheduledAt: Date | null;
  ids: string[];
  recipients: string[];
  nids: string[];
  now: Date;
  /** The worker in this process may take them at once, if it holds the device. */
  local: boolean;
}

/** What became of a request of a known account. */
export interface Acceptance extends Period {
  /** The chosen device; null: none could be chosen, nothing was written. */
  device_id: string | null;
  device_connected: boolean | null;
  /** Messages written: all of the request's, or none (no device, or the quota did not hold). */
  inserted: number;
  /** Inserted claimed by the direct worker: hand them over. */
  taken: boolean | null;
}

/**
 * One statement for a batch of requests (unnest of one array per field; the kind's payload and the
 * mentions travel as JSON text, as arrays of arrays cannot be unnested). Each account's quota is
 * reserved once for all its requests in the batch (`n`: the messages that count against it); an
 * account whose reservation did not hold for that total has nothing written; messages that do not
 * count have no period (nothing to refund). Key lookups and inserts only, and its planning took longer than
 * running it, so it is planned once per connection.
 */
const ACCEPT: Omit<PreparedStatement, 'values'> = {
  name: 'messages_accept',
  genericPlan: true,
  text: `WITH r AS (
    SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[], $11::bool[],
                         $19::text[], $20::text[], $21::text[])
      AS r(idx, account_id, device_req, n, type, content, media_url, status, due_at, scheduled_at, local_ok, payload, reply_to, mentions)),
  a AS (${PERIODS_SQL('ac.id IN (SELECT account_id FROM r)', '$12')}),
  d AS (
    SELECT r.idx, r.account_id, r.n, dv.id AS device_id, dv.status, (r.local_ok AND dv.id = ANY($13::text[])) AS local
      FROM r CROSS JOIN LATERAL (${DEVICE_CHOICE_SQL('r.account_id', 'r.device_req')}) AS dv),
  need AS (SELECT account_id, sum(n)::int AS n FROM d GROUP BY account_id),
  u AS (${RESERVE_SQL('need', 'a')}),
  accepted AS (
    SELECT m.id, d.account_id, d.device_id, m.peer, r.type, r.content, r.media_url, r.payload::jsonb AS payload, r.reply_to,
           CASE WHEN r.mentions IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(r.mentions::jsonb)) END AS mentions,
           r.status, r.due_at, m.nid, CASE WHEN r.n > 0 THEN u.period_start END AS period_start, r.scheduled_at, d.local
      FROM unnest($15::int[], $16::text[], $17::text[], $18::text[]) AS m(idx, id, peer, nid)
      JOIN r ON r.idx = m.idx JOIN d ON d.idx = m.idx JOIN u ON u.account_id = d.account_id),
  ${INSERT_DIRECT_SQL('accepted', '$14')}
  SELECT r.idx, d.device_id, d.status = 'CONNECTED' AS device_connected, d.local AS taken, (u.account_id IS NOT NULL) AS reserved,
         a.period_start, a.period_end, a.quota
    FROM r LEFT JOIN d ON d.idx = r.idx LEFT JOIN a ON a.account_id = r.account_id LEFT JOIN u ON u.account_id = r.account_id`,
};

/** Accepts direct sends in one statement; by request: what became of it, or undefined for an unknown account. */
export async function acceptDirect(db: Database, requests: AcceptRequest[], worker: DirectWorker | undefined): Promise<(Acceptance | undefined)[]> {
  const messages = requests.flatMap((r, idx) => r.ids.map((id, i) => ({ idx, id, peer: r.recipients[i]!, nid: r.nids[i]! })));
  const column = <T>(pick: (r: AcceptRequest) => T): T[] => requests.map(pick);
  const rows = await db.queryPrepared<Omit<Acceptance, 'inserted'> & { idx: number; reserved: boolean }>({
    ...ACCEPT,
    values: [
      requests.map((_, idx) => idx),
      column((r) => r.accountId),
      column((r) => r.deviceId),
      column((r) => (countsAgainstQuota(r.type) ? r.ids.length : 0)),
      column((r) => r.type),
      column((r) => r.content),
      column((r) => r.mediaUrl),
      column((r) => r.status),
      column((r) => r.dueAt),
      column((r) => r.scheduledAt),
      column((r) => r.local),
      requests[0]!.now,
      worker?.devices ?? [],
      worker?.workerId ?? null,
      messages.map((m) => m.idx),
      messages.map((m) => m.id),
      messages.map((m) => m.peer),
      messages.map((m) => m.nid),
      column((r) => (r.payload === null ? null : JSON.stringify(r.payload))),
      column((r) => r.replyTo),
      column((r) => (r.mentions === null ? null : JSON.stringify(r.mentions))),
    ],
  });
  const byIdx = new Map(rows.map((row) => [row.idx, row]));
  return requests.map((request, idx) => {
    const row = byIdx.get(idx);
    if (!row || row.period_start === null) return undefined;
    const { idx: _, reserved, ...acceptance } = row;
    return { ...acceptance, inserted: reserved && row.device_id !== null ? request.ids.length : 0 };
  });
}

/** Accept statements in flight at once, and direct sends per statement. */
const ACCEPT_PIPELINES = 2;
const ACCEPT_BATCH_MAX = 200;

interface PendingAccept {
  request: AcceptRequest;
  resolve(row: Acceptance | undefined): void;
  reject(error: unknown): void;
}

/**
 * Batches acceptDirect: requests that arrive while a statement runs go together in the next.
 * Every request gets the answer it would have had alone: one that a batch did not take (no
 * device, or its account's quota did not cover the batch's sends together) is tried alone, and
 * when a batch's statement fails (nothing of it was written) each of several is tried alone.
 */
export class DirectAccepts {
  private readonly pump = new BatchPump<PendingAccept>((batch) => this.run(batch), { maxInFlight: ACCEPT_PIPELINES, maxBatch: ACCEPT_BATCH_MAX });

  constructor(
    private readonly database: Database,
    private readonly worker: () => DirectWorker | undefined,
  ) {}

  accept(request: AcceptRequest): Promise<Acceptance | undefined> {
    return new Promise((resolve, reject) => this.pump.push({ request, resolve, reject }));
  }

  private async run(batch: PendingAccept[]): Promise<void> {
    let rows: (Acceptance | undefined)[] | undefined;
    try {
      rows = await acceptDirect(this.database, batch.map((b) => b.request), this.worker());
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
    }
    for (const [idx, { request, resolve, reject }] of batch.entries()) {
      const row = rows?.[idx];
      if (row?.inserted || batch.length === 1) resolve(row);
      else await acceptDirect(this.database, [request], this.worker()).then(([alone]) => resolve(alone), reject);
    }
  }
}
