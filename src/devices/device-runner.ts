/**
 * One linked device inside the worker that holds its lease: its network session, the events
 * the network reports (QR, connection, receipts, incoming), and its dispatch loop — direct sends
 * before bulk, bulk paced by BULK_DELAY_MS with jitter, scheduled messages claimed when due.
 */
import { sendAckSeconds } from '../platform/metrics.js';
import type { Logger } from 'pino';
import type { Bus } from '../platform/bus.js';
import { BatchPump } from '../platform/batch-pump.js';
import { WakeLoop } from '../platform/wake-loop.js';
import { newId } from '../platform/ids.js';
import { isMediaType, type DeviceInfo, type Network, type NetworkEvent, type NetworkSession, type OutgoingMedia, type OutgoingMessage, type SendResult } from '../network/network.js';
import type { ClaimedAction } from '../messaging/action-store.js';
import type { MediaResult } from '../outbound/media.js';
import type { SendMedia } from '../media/uploads.js';
import type { MessageQueue, Outcome } from '../messaging/message-queue.js';
import type { IncomingMediaReceiver, ReceivedMedia } from '../media/incoming-media.js';
import { kindOf, type ClaimedMessage } from '../messaging/message-store.js';
import { PRIORITY } from '../messaging/message-model.js';
import { advance } from './device-states.js';
import { alongSchedule, CONNECT_BACKOFF_MS } from '../platform/backoff.js';
import type { DeviceStore } from './device-store.js';
import type { ConversationWorker } from '../conversations/conversation-worker.js';

export interface DeviceRunnerOptions {
  device: DeviceInfo;
  network: Network;
  queue: MessageQueue;
  /** Every statement on the device's row (its transitions, its QR code). */
  devices: DeviceStore;
  bus: Bus;
  /** A message's file at send time (an upload, or its URL fetched through the SSRF guard). */
  sendMedia: SendMedia;
  /** Downloads the files of incoming media messages into the media store. */
  media: IncomingMediaReceiver;
  log: Logger;
  workerId: string;
  bulkDelayMs: { min: number; max: number };
  /** Messages per claim when bulk traffic is not paced. */
  batchSize: number;
  /** Called when the device leaves this worker by itself (logged out). */
  onLoggedOut(deviceId: string): void;
  /** False once the lease may have lapsed: stop handing messages over. */
  leaseValid(): boolean;
  /** Whether a job was cancelled: its claimed messages are cancelled instead of handed over. */
  jobCancelled(jobId: string): boolean;
  /** The network's groups and LIDs into chats; the API's requests of the session (src/conversations). */
  conversations: ConversationWorker;
}

const MAX_IDLE_WAIT_MS = 1_000;
/**
 * How long a dispatch loop with nothing due sleeps at most. A new or retried message wakes it
 * through the bus, a scheduled one is slept up to, and the supervisor's due poll wakes it when a
 * notification was lost: a thousand idle devices cost no statements of their own.
 */
const NOTHING_DUE_WAIT_MS = 30_000;
/**
 * Edits, deletes and read receipts: how many per turn, and how long the loop idles at most (each
 * new one wakes it through the bus; a retry's time is known when it is written).
 */
const ACTIONS_PER_TURN = 20;
const ACTIONS_IDLE_MS = 30_000;
/** Direct sends handed over by the API in this process: batches in flight at once. */
const DIRECT_PIPELINES = 2;
/** Paced hand-overs of a device whose outcome writes may run at once (see sendPaced). */
const PACED_WRITES = 4;

export class DeviceRunner {
  private session: NetworkSession | undefined;
  private status: DeviceInfo['status'];
  private stopped = false;
  private readonly dispatchLoops: WakeLoop[] = [];
  private actions: WakeLoop | undefined;
  private nextBulkAt = 0;
  /** When a message was last handed to the network (the pacing's reference). */
  private lastHandedAt = 0;
  /** The last dispatch turn found nothing due (not pacing, not disconnected): the due poll may wake it. */
  private nothingDue = false;
  private reconnectAttempt = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** The session stopped (a `stopped` event): no reconnects until someone asks (reconnectNow). */
  private halted = false;
  /** Direct sends handed over by the API in this process, batched (see sendNow). */
  private readonly direct: BatchPump<ClaimedMessage>;
  /** Outcome writes of paced hand-overs still running (see sendPaced). */
  private readonly pacedWrites = new Set<Promise<void>>();

  constructor(private readonly options: DeviceRunnerOptions) {
    this.status = options.device.status;
    this.direct = new BatchPump((batch) => this.sendDirectBatch(batch), { maxInFlight: DIRECT_PIPELINES, maxBatch: options.batchSize });
  }

  get deviceId(): string {
    return this.options.device.id;
  }

  /** Bulk traffic goes one message at a time: paced by BULK_DELAY_MS, or counted against the network's cap (warm-up). */
  private get paced(): boolean {
    return this.options.bulkDelayMs.max > 0 || Boolean(this.session?.bulkPolicy);
  }

  async start(): Promise<void> {
    this.session = await this.options.network.openSession(this.options.device, { onEvent: (event) => this.onEvent(event) });
    // Unpaced traffic runs two claim loops, so one batch is written while the next is sent
    // (claims skip each other's rows). Paced traffic runs one: pacing is sequential by nature.
    const loops = this.paced ? 1 : 2;
    for (let i = 0; i < loops; i++) {
      const loop = new WakeLoop(() => this.dispatchTurn(), { name: `dispatch of ${this.deviceId}`, log: this.options.log, errorBackoffMs: MAX_IDLE_WAIT_MS });
      this.dispatchLoops.push(loop);
      loop.start();
    }
    this.actions = new WakeLoop(() => this.actionsTurn(), { name: `actions of ${this.deviceId}`, log: this.options.log, errorBackoffMs: MAX_IDLE_WAIT_MS });
    this.actions.start();
  }

  /** Whether the API in this process may hand direct sends to this runner now. */
  get acceptsDirect(): boolean {
    return !this.stopped && this.status === 'CONNECTED' && this.options.leaseValid();
  }

  /**
   * Direct sends the API of this process inserted already claimed by this worker (SENDING): they
   * go to the network at once, without a claim round. Requests that arrive while two batches
   * are in flight share the next one, so their outcomes are written together.
   */
  sendNow(messages: ClaimedMessage[]): void {
    this.direct.push(...messages);
  }

  /** One batch of hand-overs; when stopping, what was not handed over goes back to the queue for the device's next owner. */
  private async sendDirectBatch(batch: ClaimedMessage[]): Promise<void> {
    try {
      if (this.stopped) await this.options.queue.release(batch.map((m) => m.id));
      else await this.sendBatch(batch, true);
    } catch (error) {
      this.options.log.error({ err: error, deviceId: this.deviceId }, 'direct send failed');
    }
  }

  /** Wakes every loop (the device connected: anything may be due). */
  wake(): void {
    this.wakeDispatch();
    this.wakeActions();
  }

  /** Messages may be due: the dispatch loops run now (a direct send first, when paced). */
  wakeDispatch(): void {
    this.directsWaiting = true;
    for (const loop of this.dispatchLoops) loop.wake();
  }

  /** An edit, delete or read receipt was recorded: the loop of actions runs now. */
  wakeActions(): void {
    this.actions?.wake();
  }

  /** Whether the dispatch loop sleeps because nothing was due (see NOTHING_DUE_WAIT_MS). */
  get idle(): boolean {
    return this.nothingDue && !this.stopped;
  }

  async reconnectNow(): Promise<void> {
    if (this.status === 'DISCONNECTED' || this.halted) {
      this.halted = false;
      this.reconnectAttempt = 0;
      await this.session?.reconnect();
    }
  }

  /** Drains: no new claims, the batch in flight finishes, then the session closes (or unlinks). */
  async stop(options: { logout: boolean }): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    await Promise.all([...this.dispatchLoops, ...(this.actions ? [this.actions] : [])].map((loop) => loop.stop()));
    await Promise.all(this.pacedWrites);
    await this.direct.drain();
    if (options.logout) await this.session?.logout().catch((error: unknown) => this.options.log.warn({ err: error }, 'logout failed'));
    else await this.session?.close().catch(() => undefined);
  }

  /** After a transition that changed the row: its device.status event is due for webhooks, and listeners hear of it. */
  private async announce(changed: boolean): Promise<boolean> {
    if (changed) {
      this.options.bus.local('waygate_webhooks', 'due');
      await this.options.bus.publish('waygate_devices', `status:${this.deviceId}`);
    }
    return changed;
  }

  /** What the network reports; the state machine is device-states.ts, its statements the device store's. */
  private async onEvent(event: NetworkEvent): Promise<void> {
    const { queue } = this.options;
    switch (event.type) {
      case 'qr':
        return this.onQr(event.code, event.expiresAt);
      case 'connected':
        return this.onConnected(event.phoneNumber);
      case 'disconnected':
        return event.reason === 'logout' ? this.onLoggedOut(event.message) : this.onDisconnected(event.message);
      case 'stopped':
        return this.onStopped(event.code, event.message);
      case 'warning':
        return this.onWarning(event.code, event.message);
      case 'receipts':
        await queue.applyReceipts(this.options.device.accountId, this.deviceId, event.receipts);
        return;
      case 'incoming':
        return this.onIncoming(event);
      case 'poll-vote':
        await queue.recordPollVote(this.deviceId, event);
        return;
      case 'edited':
        await queue.applyRemoteChange(this.deviceId, 'edit', event);
        return;
      case 'deleted':
        await queue.applyRemoteChange(this.deviceId, 'delete', event);
        return;
      case 'groups':
      case 'identity':
      case 'presence':
        return this.options.conversations.onNetworkEvent(this.deviceId, event);
    }
  }

  /** An incoming message, stored with its file when it has one (downloaded first, so message.received can serve it). */
  private async onIncoming(event: Extract<NetworkEvent, { type: 'incoming' }>): Promise<void> {
    const { queue, media } = this.options;
    const { download, messageType: type, type: _, ...incoming } = event;
    const id = newId('msg');
    let file: ReceivedMedia | undefined;
    if (download && isMediaType(type)) {
      if (await queue.knowsIncoming(this.deviceId, event.networkMessageId)) return;
      file = await media.receive({ messageId: id, accountId: this.options.device.accountId, type, media: event.media, download });
    }
    const stored = await queue.storeIncoming(this.deviceId, { ...incoming, type, media: file?.media ?? event.media, mediaUrl: file?.mediaUrl }, id);
    if (!stored && file?.mediaUrl) await media.discard(id);
  }

  private async onQr(code: string, expiresAt: Date): Promise<void> {
    await this.options.devices.setQr(this.deviceId, code, expiresAt);
    await this.options.bus.publish('waygate_devices', `qr:${this.deviceId}`);
  }

  private async onConnected(phoneNumber: string): Promise<void> {
    this.reconnectAttempt = 0;
    this.halted = false;
    if (await this.announce(await this.options.devices.markConnected(this.deviceId, phoneNumber))) {
      this.options.log.info({ deviceId: this.deviceId }, 'device connected');
    }
    this.status = advance('connected', this.status);
    this.wake();
    void this.serveRequests();
  }

  /** Serves what the API asked of this device's session (number look-ups, read receipts, presence) while connected. */
  serveRequests(): Promise<void> {
    return this.options.conversations.serve(this.deviceId, () => (this.stopped || this.status !== 'CONNECTED' ? undefined : this.session));
  }

  /** Unlinked from the phone: what waits for the device fails, and the device leaves this worker. */
  private async onLoggedOut(message: string): Promise<void> {
    const id = this.deviceId;
    await this.announce(await this.options.devices.markLoggedOut(id, message));
    this.status = advance('logout', this.status);
    const failed = await this.options.queue.failDevice(id, 'DEVICE_LOGGED_OUT', 'The device was unlinked from the phone before the message was sent');
    this.options.log.info({ deviceId: id, failedMessages: failed }, 'device logged out');
    this.stopped = true;
    this.wake();
    this.options.onLoggedOut(id);
  }

  /** Dispatch stops first (the in-memory status), then the row says so: nothing is claimed for a device already known to be down. */
  private async onDisconnected(message: string): Promise<void> {
    this.status = advance('disconnected', this.status);
    await this.announce(await this.options.devices.markDisconnected(this.deviceId, message));
    this.scheduleReconnect();
  }

  /** No reconnects until someone asks (reconnectNow); the reason goes into lastError. */
  private async onStopped(code: string, message: string): Promise<void> {
    this.halted = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.options.log.warn({ deviceId: this.deviceId, code }, message);
    await this.announce(await this.options.devices.markStopped(this.deviceId, `${code}: ${message}`));
    this.status = advance('stopped', this.status);
  }

  private async onWarning(code: string, message: string): Promise<void> {
    this.options.log.warn({ deviceId: this.deviceId, code }, message);
    await this.announce(await this.options.devices.noteWarning(this.deviceId, `${code}: ${message}`));
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.halted || this.reconnectTimer) return;
    this.reconnectAttempt++;
    const delay = alongSchedule(CONNECT_BACKOFF_MS, this.reconnectAttempt);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.stopped || this.halted || this.status !== 'DISCONNECTED') return;
      // A worker that may have lost the lease does not reconnect (the new owner's session would be kicked off).
      if (!this.options.leaseValid()) {
        this.scheduleReconnect();
        return;
      }
      void this.session
        ?.reconnect()
        .catch((error: unknown) => this.options.log.warn({ err: error, deviceId: this.deviceId }, 'reconnect failed'))
        .finally(() => {
          // Still down after the attempt: try again later, further apart.
          setTimeout(() => {
            if (this.status === 'DISCONNECTED') this.scheduleReconnect();
          }, 200).unref();
        });
    }, delay);
    this.reconnectTimer.unref();
  }

  /** One turn of dispatch: a claimed batch sent (0: go on), or how long to wait for more. */
  private async dispatchTurn(): Promise<number> {
    const { queue } = this.options;
    this.nothingDue = false;
    if (this.stopped) return MAX_IDLE_WAIT_MS;
    if (this.status !== 'CONNECTED' || !this.options.leaseValid()) return MAX_IDLE_WAIT_MS;
    if (this.paced) {
      const wait = await this.pacedTurn();
      if (wait !== undefined) return wait;
    } else {
      const claimed = await queue.claim(this.deviceId, this.options.batchSize, false);
      if (claimed.length > 0) {
        await this.sendBatch(claimed);
        return 0;
      }
    }
    const next = await queue.nextDueAt(this.deviceId);
    this.nothingDue = true;
    return next ? Math.min(NOTHING_DUE_WAIT_MS, next.getTime() - Date.now()) : NOTHING_DUE_WAIT_MS;
  }

  /**
   * Paced traffic: direct sends at once (up to 50 a turn), bulk messages one at a time, each
   * BULK_DELAY_MS after the last hand-over. One claim a turn: the direct-only claim runs only
   * after a wake (a direct send wakes the loop) or a turn that found direct sends, and a bulk
   * slot's claim of one takes a direct send first (the queue is ordered by priority).
   * Undefined: nothing is due.
   */
  private async pacedTurn(): Promise<number | undefined> {
    const { queue } = this.options;
    await this.pacedWriteRoom();
    if (this.directsWaiting) {
      this.directsWaiting = false;
      const direct = await queue.claim(this.deviceId, 50, true);
      if (direct.length > 0) {
        this.directsWaiting = true;
        await this.sendPaced(direct);
        return 0;
      }
    }
    const wait = this.nextBulkAt - Date.now();
    if (wait > 0) return wait;
    // Warm-up cap (network policy): when today's bulk allowance is used up, bulk messages stay QUEUED until it resets.
    const allowance = this.session?.bulkPolicy?.allowance();
    if (allowance && allowance.remaining <= 0) {
      this.noteCapReached(allowance.resumeAt);
      this.directsWaiting = true;
      return Math.min(MAX_IDLE_WAIT_MS, allowance.resumeAt.getTime() - Date.now());
    }
    const claimed = await queue.claim(this.deviceId, 1, false);
    if (claimed.length === 0) return undefined;
    await this.sendPaced(claimed);
    const bulkCount = claimed.filter((m) => m.priority === PRIORITY.bulk).length;
    if (bulkCount === 0) {
      this.directsWaiting = true;
      return 0;
    }
    await this.session?.bulkPolicy?.consumed(bulkCount);
    this.paceBulk();
    // Nothing to do until the next bulk message may go: a direct send wakes the loop.
    return Math.max(0, this.nextBulkAt - Date.now());
  }

  /** A direct send may be waiting: the paced turn claims direct sends first (see pacedTurn). */
  private directsWaiting = true;

  /**
   * One turn of edits, deletes and read receipts: each handed to the network in the order they
   * were made (an edit before the delete that follows it), then their outcomes written.
   */
  private async actionsTurn(): Promise<number> {
    const session = this.session;
    if (this.stopped || !session || this.status !== 'CONNECTED' || !this.options.leaseValid()) return ACTIONS_IDLE_MS;
    const claimed = await this.options.queue.claimActions(this.deviceId, ACTIONS_PER_TURN);
    if (claimed.length === 0) {
      const retryIn = this.nextActionRetryAt - Date.now();
      return retryIn > 0 ? Math.min(ACTIONS_IDLE_MS, retryIn) : ACTIONS_IDLE_MS;
    }
    const results: { action: ClaimedAction; result: SendResult }[] = [];
    for (const action of claimed) results.push({ action, result: await performAction(session, action) });
    const { failed, retry } = await this.options.queue.finishActions(results);
    for (const failure of failed) this.options.log.warn({ deviceId: this.deviceId, actionId: failure.id, code: failure.code }, `the network did not take an edit, delete or read receipt: ${failure.message}`);
    const pending = this.nextActionRetryAt > Date.now() ? [this.nextActionRetryAt] : [];
    if (retry.length > 0) this.nextActionRetryAt = Math.min(...pending, ...retry.map((r) => r.dueAt.getTime()));
    return 0;
  }

  /** When the earliest action written for a retry is due (0: none). */
  private nextActionRetryAt = 0;

  private capLoggedUntil = 0;

  private noteCapReached(resumeAt: Date): void {
    if (this.capLoggedUntil === resumeAt.getTime()) return;
    this.capLoggedUntil = resumeAt.getTime();
    this.options.log.info({ deviceId: this.deviceId, resumeAt }, 'bulk allowance of the network used up (warm-up cap) or paused; bulk messages stay queued until then');
  }

  /** The next bulk message goes BULK_DELAY_MS after the last hand-over to the network (not after its outcome was written). */
  private paceBulk(): void {
    const { min, max } = this.options.bulkDelayMs;
    this.nextBulkAt = this.lastHandedAt + min + Math.random() * (max - min);
  }

  /** `handedOver`: direct sends of this process's API, whose requests wait here (no other process needs to hear of them). */
  private async sendBatch(messages: ClaimedMessage[], handedOver = false): Promise<void> {
    const handed = await this.handOver(messages);
    if (handed) await this.writeOutcomes(handed, handedOver);
  }

  /**
   * Paced traffic: the loop goes on once the network has taken the messages, and their outcome
   * is written meanwhile (the next message is due BULK_DELAY_MS after this hand-over, whatever
   * the write waits on); at most PACED_WRITES of a device's writes run at once.
   */
  private async sendPaced(messages: ClaimedMessage[]): Promise<void> {
    const handed = await this.handOver(messages);
    if (!handed) return;
    const write: Promise<void> = this.writeOutcomes(handed, false)
      .catch((error: unknown) => this.options.log.error({ err: error, deviceId: this.deviceId }, 'writing the outcome of paced messages failed'))
      .finally(() => this.pacedWrites.delete(write));
    this.pacedWrites.add(write);
  }

  /** Room for one more paced write (see sendPaced). */
  private async pacedWriteRoom(): Promise<void> {
    while (this.pacedWrites.size >= PACED_WRITES) await Promise.race(this.pacedWrites);
  }

  /** Hands claimed messages to the network; undefined: none was (the lease or the connection is gone), and they are back in the queue. */
  private async handOver(messages: ClaimedMessage[]): Promise<{ outcomes: Outcome[]; cancelled: string[] } | undefined> {
    const session = this.session;
    // Claimed just before the lease lapsed or the network dropped: back to the queue, not attempted.
    if (!this.options.leaseValid() || !session || this.status !== 'CONNECTED') {
      await this.options.queue.release(messages.map((m) => m.id));
      return undefined;
    }
    const media = new Map<string, Promise<MediaResult>>();
    const cancelled: string[] = [];
    const handed = await Promise.all(messages.map((message) => this.sendOne(session, message, media, cancelled)));
    return { outcomes: handed.filter((outcome): outcome is Outcome => outcome !== undefined), cancelled };
  }

  /** Writes what the network answered, and tells the direct sends' waiters. */
  private async writeOutcomes({ outcomes, cancelled }: { outcomes: Outcome[]; cancelled: string[] }, handedOver: boolean): Promise<void> {
    const { queue, bus } = this.options;
    await queue.cancelClaimed(cancelled);
    const summary = await queue.finalize(this.deviceId, outcomes);
    // Tell the API processes waiting on direct sends (payloads stay under NOTIFY's 8000 bytes).
    for (let i = 0; i < summary.directIds.length; i += 200) {
      const ids = summary.directIds.slice(i, i + 200).join(',');
      // Waiters in this process get the rows too (no read needed); other processes hear the ids.
      bus.local('waygate_acks', ids, summary.directRows);
      if (!handedOver) bus.publishSoon('waygate_acks', ids);
    }
  }

  /**
   * Hands one message to the network: its media fetched once per batch (`media`), or its id put
   * in `cancelled` (its job was cancelled meanwhile; no outcome). A throw is a transient failure.
   */
  private async sendOne(session: NetworkSession, message: ClaimedMessage, media: Map<string, Promise<MediaResult>>, cancelled: string[]): Promise<Outcome | undefined> {
    try {
      let attachment: OutgoingMedia | undefined;
      if (isMediaType(message.type) && message.mediaUrl) {
        const key = `${message.type} ${message.mediaUrl}`;
        if (!media.has(key)) media.set(key, this.options.sendMedia(message.accountId, message.mediaUrl, message.type));
        const fetched = await media.get(key)!;
        if (!fetched.ok) return { message, result: fetched };
        attachment = fetched.media;
      }
      if (message.jobId && this.options.jobCancelled(message.jobId)) {
        cancelled.push(message.id);
        return undefined;
      }
      const outgoing = outgoingMessage(message, attachment);
      if (!outgoing) {
        return { message, result: { ok: false, permanent: true, code: 'REFERENCE_MISSING', message: 'The message reacted to is no longer stored' } };
      }
      const handedAt = performance.now();
      this.lastHandedAt = Date.now();
      const result = await session.send(outgoing);
      if (!result.ok) return { message, result };
      sendAckSeconds.observe((performance.now() - handedAt) / 1000);
      return { message, result: { ok: true, at: new Date() } };
    } catch (error) {
      return { message, result: { ok: false, permanent: false, code: 'NETWORK_ERROR', message: (error as Error).message } };
    }
  }
}

/** Hands one edit, delete or read receipt to the network; a throw is a transient failure. */
async function performAction(session: NetworkSession, action: ClaimedAction): Promise<SendResult> {
  const { target } = action;
  if (!target) return { ok: false, permanent: true, code: 'REFERENCE_MISSING', message: 'The message is no longer stored' };
  try {
    switch (action.action) {
      case 'edit':
        return await session.edit(target, action.content ?? '');
      case 'delete':
        return await session.revoke(target);
      case 'read':
        return await session.markRead(target);
    }
  } catch (error) {
    return { ok: false, permanent: false, code: 'NETWORK_ERROR', message: (error as Error).message };
  }
}

/** What the network is handed for a claimed message; undefined for a REACTION whose target is gone. */
function outgoingMessage(message: ClaimedMessage, media: OutgoingMedia | undefined): OutgoingMessage | undefined {
  const { networkMessageId, to, type, content, accountId, payload, mentions, reference } = message;
  const outgoing: OutgoingMessage = { networkMessageId, to, type, content, media, accountId };
  const kind = kindOf(payload);
  if (kind) outgoing.kind = kind;
  if (payload?.reaction) {
    if (!reference) return undefined;
    outgoing.reaction = { target: reference, emoji: payload.reaction.emoji };
  }
  if (reference && !payload?.reaction) outgoing.replyTo = reference;
  if (mentions) outgoing.mentions = mentions;
  return outgoing;
}
