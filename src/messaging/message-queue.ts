/**
 * The queue as one worker sees it: what it claims, hands back, and learns from the network, for
 * the devices whose lease it holds. Each operation is one call on the stores (message-store.ts,
 * outcomes.ts); this class adds the worker's id, its retry policy, the metrics, and the wake-up of
 * an in-process webhook worker once events were written.
 */
import { retrying, type Database } from '../platform/database.js';
import type { Receipt } from '../network/network.js';
import { messageFailures, messageTransitions } from '../platform/metrics.js';
import { workBudget } from '../platform/work-budget.js';
import { BatchPump } from '../platform/batch-pump.js';
import { doubling, jittered } from '../platform/backoff.js';
import { PRIORITY, type MessageRow } from './message-model.js';
import * as messages from './message-store.js';
import * as queue from './queue-store.js';
import type { ClaimedMessage, IncomingMessage } from './message-store.js';
import type { ChatActivity } from '../conversations/chat-activity.js';
import { applyReceipts, failWaiting, writeOutcomes, type DeviceReceipt, type Failure, type Retry, type Sent } from './outcomes.js';
import * as actions from './action-store.js';
import type { ClaimedAction, RemoteChange } from './action-store.js';
import type { SendResult } from '../network/network.js';

export type { ClaimedMessage } from './message-store.js';

export interface Outcome {
  message: ClaimedMessage;
  /** `at`: when the network took the message (its sentAt). */
  result: { ok: true; at: Date } | { ok: false; permanent: boolean; code: string; message: string };
}

export interface FinalizeSummary {
  sent: number;
  failed: number;
  retried: number;
  /** Direct sends whose outcome is now known (for the API's waiters). */
  directIds: string[];
  /** Their rows as written. */
  directRows: MessageRow[];
}

/** Network ids of handed-over messages a worker keeps for their receipts (about 15 MB at most). */
const HANDED_OVER_KEPT = 100_000;

/** Backoff for transient failures: 1 s, 2 s, 4 s … capped at 5 min, with ±20% jitter. */
export function retryDelayMs(attempt: number): number {
  return jittered(doubling(attempt, 1_000, 300_000));
}

/** Sorts the network's answers: sent, failed for good (permanent, or out of attempts), or to retry later. */
export function sortOutcomes(outcomes: Outcome[], maxAttempts: number, now = Date.now()): { sent: Sent[]; failed: Failure[]; retry: Retry[] } {
  const sorted = { sent: [] as Sent[], failed: [] as Failure[], retry: [] as Retry[] };
  for (const { message, result } of outcomes) {
    if (result.ok) sorted.sent.push({ id: message.id, at: result.at });
    else if (result.permanent || message.attempts >= maxAttempts) {
      const text = result.permanent ? result.message : `${result.message} (gave up after ${message.attempts} attempts)`;
      sorted.failed.push({ id: message.id, code: result.code, message: text });
    } else {
      sorted.retry.push({ id: message.id, dueAt: new Date(now + retryDelayMs(message.attempts)), code: result.code, message: result.message });
    }
  }
  return sorted;
}

/** One device's outcomes waiting for the next batched write. */
interface OutcomeWrite {
  sent: Sent[];
  failed: Failure[];
  retry: Retry[];
  /** Whether any of these messages belongs to a bulk job. */
  jobs: boolean;
  /** With the rows of its direct sends that ended, as written. */
  resolve: (directRows: MessageRow[]) => void;
  reject: (error: unknown) => void;
}

/** One device's receipts waiting for the next batched write. */
interface ReceiptWrite {
  receipts: DeviceReceipt[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** One device's claim waiting for the next batched claim. */
interface PendingClaim extends messages.ClaimRequest {
  resolve: (claimed: ClaimedMessage[]) => void;
  reject: (error: unknown) => void;
}

/** Devices per claim statement. */
const CLAIM_BATCH_MAX = 200;

/** The account's pump in `pumps`, made on first use. */
function pumpOf<T>(pumps: Map<string, BatchPump<T>>, accountId: string, make: () => BatchPump<T>): BatchPump<T> {
  let pump = pumps.get(accountId);
  if (!pump) pumps.set(accountId, (pump = make()));
  return pump;
}

export class MessageQueue {
  constructor(
    private readonly database: Database,
    private readonly workerId: string,
    private readonly maxAttempts: number,
    /** Called after events were written, to wake an in-process webhook worker at once. */
    private readonly onEvents: () => void = () => undefined,
    /** Receipts per statement (see WorkBudget). */
    private readonly receiptBatch = workBudget(database).receiptBatch,
    /** Chats follow the traffic (src/conversations): told what was handed over, and of incoming messages. */
    private readonly chats?: ChatActivity,
  ) {}

  /**
   * Per account, the outcomes of its devices on this worker that arrive together are written by
   * one statement: a thousand paced devices each handing over one message a second would otherwise
   * take the account's lock (the events' seq) a thousand times a second, one statement each. One
   * account per statement, so statements of different accounts neither wait on nor deadlock with
   * each other.
   */
  private readonly outcomeWrites = new Map<string, BatchPump<OutcomeWrite>>();

  private outcomeWritesOf(accountId: string): BatchPump<OutcomeWrite> {
    return pumpOf(this.outcomeWrites, accountId, () =>
      new BatchPump<OutcomeWrite>((batch) => this.writeOutcomeBatch(batch), {
        maxInFlight: 2,
        maxBatch: workBudget(this.database).dispatchBatch,
        sizeOf: (write) => write.sent.length + write.failed.length + write.retry.length,
      }),
    );
  }

  private async writeOutcomeBatch(batch: OutcomeWrite[]): Promise<void> {
    const sent = batch.flatMap((w) => w.sent);
    const failed = batch.flatMap((w) => w.failed);
    const retry = batch.flatMap((w) => w.retry);
    let rows: MessageRow[];
    try {
      rows = await retrying(() => writeOutcomes(this.database, this.workerId, sent, failed, retry, { jobs: batch.some((w) => w.jobs) }));
    } catch (error) {
      for (const write of batch) write.reject(error);
      return;
    }
    this.onEvents();
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const write of batch) {
      const own = [...write.sent, ...write.failed].map((o) => byId.get(o.id)).filter((row): row is MessageRow => row !== undefined);
      write.resolve(own);
    }
  }

  /**
   * The claims of this worker's devices that arrive together (or while two statements run) are
   * one statement: a thousand paced devices each claiming a message a second would otherwise be
   * a thousand statements and commits a second.
   */
  private readonly claims = new BatchPump<PendingClaim>((batch) => this.claimBatch(batch), { maxInFlight: 2, maxBatch: CLAIM_BATCH_MAX });

  /** Claims due messages of a device: priority 0 only, or any priority (direct first), up to `limit`. */
  claim(deviceId: string, limit: number, onlyDirect: boolean): Promise<ClaimedMessage[]> {
    return new Promise((resolve, reject) => this.claims.push({ deviceId, limit, onlyDirect, resolve, reject }));
  }

  /**
   * A device asked twice (its two dispatch loops) has its second claim in a statement of its own,
   * run beside the first; each statement answers its own claims (not a BatchedCall: the claims of
   * one that succeeded must reach their loops even when the other failed).
   */
  private async claimBatch(batch: PendingClaim[]): Promise<void> {
    const first = new Map<string, PendingClaim>();
    const again: PendingClaim[] = [];
    for (const claim of batch) {
      if (first.has(claim.deviceId)) again.push(claim);
      else first.set(claim.deviceId, claim);
    }
    await Promise.all([this.claimTogether([...first.values()]), again.length > 0 ? this.claimBatch(again) : undefined]);
  }

  /**
   * A claim that starts several SCHEDULED jobs locks them in no set order, so two claims may
   * deadlock, and a claim that met a message changed after its snapshot raises a serialization
   * failure (RERUN_IF_SKIPPED): either way it changed nothing and is run again.
   */
  private async claimTogether(batch: PendingClaim[]): Promise<void> {
    try {
      const claimed = await retrying(() => messages.claimDue(this.database, this.workerId, batch));
      for (const claim of batch) claim.resolve(claimed.get(claim.deviceId) ?? []);
    } catch (error) {
      for (const claim of batch) claim.reject(error);
    }
  }

  /** Of these devices, those with a message due now. */
  devicesWithDue(deviceIds: string[]): Promise<string[]> {
    return queue.devicesWithDue(this.database, deviceIds);
  }

  nextDueAt(deviceId: string): Promise<Date | null> {
    return queue.nextDueAt(this.database, deviceId);
  }

  /** Puts claimed messages back untouched (the lease was lost before they were handed over). */
  release(ids: string[]): Promise<void> {
    return messages.releaseClaimed(this.database, this.workerId, ids);
  }

  /** Claimed messages of a cancelled job that were not handed to the network. */
  async cancelClaimed(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return (await messages.cancelMessages(this.database, { claimedBy: this.workerId, ids })).count;
  }

  /** Messages a dead owner left in SENDING go back to the queue; resent with the same network id. */
  recoverDevice(deviceId: string): Promise<number> {
    return messages.recoverSending(this.database, deviceId);
  }

  /**
   * Writes the network's answers. The network has taken these messages, so their outcome must be
   * written: a deadlock or a serialization failure is retried; if writing still fails, the
   * messages go back to the queue and are handed over again with the same network id (the
   * network de-duplicates).
   */
  async finalize(deviceId: string, outcomes: Outcome[]): Promise<FinalizeSummary> {
    if (outcomes.length === 0) return { sent: 0, failed: 0, retried: 0, directIds: [], directRows: [] };
    const { sent, failed, retry } = sortOutcomes(outcomes, this.maxAttempts);
    this.rememberHandedOver(outcomes);
    let directRows: MessageRow[];
    try {
      const pump = this.outcomeWritesOf(outcomes[0]!.message.accountId);
      directRows = await new Promise<MessageRow[]>((resolve, reject) => pump.push({ sent, failed, retry, jobs: outcomes.some((o) => o.message.jobId !== null), resolve, reject }));
    } catch (error) {
      await this.release(outcomes.map((o) => o.message.id)).catch(() => undefined);
      throw error;
    }
    if (sent.length > 0) messageTransitions.inc({ status: 'SENT' }, sent.length);
    if (failed.length > 0) messageTransitions.inc({ status: 'FAILED' }, failed.length);
    for (const failure of failed) messageFailures.inc({ code: failure.code });
    if (retry.length > 0) messageTransitions.inc({ status: 'RETRY' }, retry.length);
    const ended = new Set([...sent, ...failed].map((o) => o.id));
    this.chats?.outgoing(
      outcomes.filter((o) => ended.has(o.message.id)).map(({ message: m }) => ({ accountId: m.accountId, deviceId, chatId: m.to, messageId: m.id })),
    );
    return {
      sent: sent.length,
      failed: failed.length,
      retried: retry.length,
      directIds: outcomes.filter((o) => o.message.priority === PRIORITY.direct && ended.has(o.message.id)).map((o) => o.message.id),
      directRows,
    };
  }

  /** Fails every waiting or in-flight message of a device (logged out or removed). */
  async failDevice(deviceId: string, code: string, message: string): Promise<number> {
    const failed = await retrying(() => failWaiting(this.database, deviceId, code, message));
    if (failed > 0) this.onEvents();
    return failed;
  }

  /**
   * Applies a device's delivery and read receipts. Those of the account's devices on this worker
   * that arrive together go in one statement per kind (DELIVERED first), of `receiptBatch` at most.
   */
  async applyReceipts(accountId: string, deviceId: string, receipts: Receipt[]): Promise<void> {
    if (receipts.length === 0) return;
    const pump = pumpOf(this.receiptWrites, accountId, () =>
      new BatchPump<ReceiptWrite>((batch) => this.writeReceiptBatch(batch), { maxInFlight: 1, maxBatch: this.receiptBatch, sizeOf: (w) => w.receipts.length }),
    );
    const known = receipts.map((r) => ({ ...r, deviceId, messageId: this.handedOver.get(r.networkMessageId) }));
    await new Promise<void>((resolve, reject) => pump.push({ receipts: known, resolve, reject }));
    // A read receipt is the last a message gets.
    for (const r of receipts) if (r.status === 'READ') this.handedOver.delete(r.networkMessageId);
  }

  /**
   * The messages this worker handed to the network lately, by network id (derived from the
   * message id, so the same on every worker): their receipts lock them by key instead of looking
   * them up (DeviceReceipt.messageId). Kept until their read receipt, the oldest dropped beyond
   * HANDED_OVER_KEPT; a receipt for one not kept here is looked up.
   */
  private readonly handedOver = new Map<string, string>();

  private rememberHandedOver(outcomes: Outcome[]): void {
    for (const { message, result } of outcomes) if (result.ok) this.handedOver.set(message.networkMessageId, message.id);
    for (const oldest of this.handedOver.keys()) {
      if (this.handedOver.size <= HANDED_OVER_KEPT) break;
      this.handedOver.delete(oldest);
    }
  }

  /** Per account, like outcomeWrites. */
  private readonly receiptWrites = new Map<string, BatchPump<ReceiptWrite>>();

  private async writeReceiptBatch(batch: ReceiptWrite[]): Promise<void> {
    try {
      const receipts = batch.flatMap((w) => w.receipts);
      for (const status of ['DELIVERED', 'READ'] as const) {
        const all = receipts.filter((r) => r.status === status);
        for (let start = 0; start < all.length; start += this.receiptBatch) {
          const subset = all.slice(start, start + this.receiptBatch);
          await retrying(() => applyReceipts(this.database, status, subset));
          messageTransitions.inc({ status: `${status}_RECEIPT` }, subset.length);
        }
      }
      this.onEvents();
      for (const write of batch) write.resolve();
    } catch (error) {
      for (const write of batch) write.reject(error);
    }
  }

  /** Records a vote on a poll of the device, with its poll.vote event. */
  async recordPollVote(deviceId: string, vote: messages.PollVote): Promise<void> {
    if (await messages.recordPollVote(this.database, deviceId, vote)) this.onEvents();
  }

  /** Claims due edits, deletes and read receipts of a device for the network. */
  claimActions(deviceId: string, limit: number): Promise<ClaimedAction[]> {
    return actions.claimActions(this.database, deviceId, limit);
  }

  /** Writes what the network did with claimed actions: done, given up (permanent, or out of attempts), or retried later. */
  async finishActions(results: { action: ClaimedAction; result: SendResult }[], now = Date.now()): Promise<actions.ActionOutcomes> {
    const outcomes: actions.ActionOutcomes = { done: [], failed: [], retry: [] };
    for (const { action, result } of results) {
      if (result.ok) outcomes.done.push(action.id);
      else if (result.permanent || action.attempts >= this.maxAttempts) outcomes.failed.push({ id: action.id, code: result.code, message: result.message });
      else outcomes.retry.push({ id: action.id, dueAt: new Date(now + retryDelayMs(action.attempts)), code: result.code, message: result.message });
    }
    await actions.finishActions(this.database, outcomes);
    return outcomes;
  }

  /** Writes an edit or a delete the sender made on the network, with its event. */
  async applyRemoteChange(deviceId: string, kind: 'edit' | 'delete', change: RemoteChange): Promise<boolean> {
    const changed = await actions.applyRemoteChange(this.database, deviceId, kind, change);
    if (changed) this.onEvents();
    return changed;
  }

  /** Whether an incoming message was stored before (the network hands it over again). */
  knowsIncoming(deviceId: string, networkMessageId: string): Promise<boolean> {
    return messages.incomingExists(this.database, deviceId, networkMessageId);
  }

  /** Stores an incoming message with its message.received event; a redelivery is ignored. */
  async storeIncoming(deviceId: string, incoming: IncomingMessage, id: string): Promise<boolean> {
    const stored = await messages.storeIncoming(this.database, deviceId, incoming, id);
    if (stored) {
      this.onEvents();
      this.chats?.changed(deviceId);
    }
    return stored;
  }
}
