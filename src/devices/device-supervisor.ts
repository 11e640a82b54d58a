/**
 * Owns devices through leases in PostgreSQL: acquires free or expired leases, renews its own
 * every LEASE_MS / 3, and runs a DeviceRunner for each. A worker that dies loses its devices
 * within LEASE_MS; the next owner puts the messages the dead one left in SENDING back in the
 * queue (resent with the same network id, which the network de-duplicates).
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import type { DeviceInfo, Network } from '../network/network.js';
import type { GuardedHttp } from '../outbound/ssrf.js';
import { workBudget } from '../platform/work-budget.js';
import { WakeLoop } from '../platform/wake-loop.js';
import { DeviceRunner } from './device-runner.js';
import { isActive } from './device-states.js';
import { DeviceStore } from './device-store.js';
import { MessageQueue } from '../messaging/message-queue.js';
import { IncomingMediaReceiver } from '../media/incoming-media.js';
import { sendMediaFrom, type SendMedia } from '../media/uploads.js';
import { ChatActivity } from '../conversations/chat-activity.js';
import { ConversationWorker } from '../conversations/conversation-worker.js';
import type { ClaimedMessage } from '../messaging/message-store.js';
import { ACTIONS_PREFIX, wakeOwner, type DirectSendHost } from '../messaging/dispatch.js';

/** Sessions opened at once when a round takes many devices (a worker joining, or taking over a dead one's). */
const OPEN_CONCURRENCY = 16;
const CANCEL_MEMORY_MS = 10 * 60_000;

/**
 * How often the worker looks for due messages of its idle devices. Every new or retried message
 * wakes its device's runner through the bus; this poll only bounds the delay when a notification
 * is lost (the listening connection dropped), in one statement whatever the number of devices.
 */
const DUE_POLL_MS = 1_000;

export function newWorkerId(): string {
  return `wkr_${os.hostname()}_${process.pid}_${randomBytes(3).toString('hex')}`;
}

export class DeviceSupervisor implements DirectSendHost {
  readonly workerId: string;
  private readonly runners = new Map<string, DeviceRunner>();
  private readonly queue: MessageQueue;
  private readonly media: IncomingMediaReceiver;
  private readonly sendMedia: SendMedia;
  /** Chats follow the traffic, the network's groups and the API's requests (src/conversations). */
  private readonly chats: ChatActivity;
  private readonly conversations: ConversationWorker;
  private readonly batchSize: number;
  private readonly devices: DeviceStore;
  /** The lease rounds; wake() runs one now (or right after the one in progress). */
  private readonly rounds: WakeLoop;
  /** Once a second: wakes the idle runners of devices with a message due (a notification that was lost). */
  private readonly duePoll: WakeLoop;
  private readonly roundEveryMs: number;
  private leaseValidUntil = 0;
  private readonly unsubscribers: (() => void)[] = [];
  /** Jobs cancelled lately (id → until when it is remembered): their claimed messages are not handed over. */
  private readonly cancelledJobs = new Map<string, number>();

  constructor(
    database: Database,
    private readonly bus: Bus,
    private readonly network: Network,
    http: GuardedHttp,
    private readonly config: Config,
    private readonly log: Logger,
    workerId: string = newWorkerId(),
  ) {
    this.workerId = workerId;
    this.chats = new ChatActivity(database, bus, log);
    this.conversations = new ConversationWorker(database, bus, this.chats, log, config.numberCheckIntervalMs);
    this.queue = new MessageQueue(database, workerId, config.sendMaxAttempts, () => bus.local('waygate_webhooks', 'due'), undefined, this.chats);
    this.media = new IncomingMediaReceiver(database, log);
    this.sendMedia = sendMediaFrom(database, http);
    this.batchSize = workBudget(database).dispatchBatch;
    this.devices = new DeviceStore(database);
    this.roundEveryMs = Math.max(250, Math.floor(config.leaseMs / 3));
    this.rounds = new WakeLoop((signal) => this.leaseTurn(signal), { name: 'lease round', log, errorBackoffMs: this.roundEveryMs });
    this.duePoll = new WakeLoop(() => this.duePollTurn(), { name: 'due poll', log, errorBackoffMs: DUE_POLL_MS });
  }

  get ownedDevices(): string[] {
    return [...this.runners.keys()];
  }

  directDevices(): string[] {
    const ids: string[] = [];
    for (const [id, runner] of this.runners) if (runner.acceptsDirect) ids.push(id);
    return ids;
  }

  handOver(deviceId: string, messages: ClaimedMessage[]): void {
    const runner = this.runners.get(deviceId);
    if (runner) {
      runner.sendNow(messages);
      return;
    }
    // The device left this worker between the insert and now: back to the queue, for its next owner.
    void this.queue
      .release(messages.map((m) => m.id))
      .then(() => wakeOwner(this.bus, deviceId))
      .catch((error: unknown) => this.log.error({ err: error, deviceId }, 'could not put direct sends back in the queue'));
  }

  start(): void {
    this.unsubscribers.push(
      this.bus.subscribe('waygate_devices', (payload) => {
        const [kind, id] = payload.includes(':') ? payload.split(':') : ['new', payload];
        if (kind === 'reconnect' && id && this.runners.has(id)) void this.runners.get(id)!.reconnectNow();
        if (kind === 'restart' && id && this.runners.has(id)) void this.restartRunner(id);
        if (kind === 'request' && id) void this.runners.get(id)?.serveRequests();
        if (kind === 'new' || kind === 'logout' || kind === 'reconnect') this.tick();
      }),
      this.bus.subscribe('waygate_dispatch', (payload) => {
        if (payload.startsWith('cancel:')) this.noteCancelled(payload.slice('cancel:'.length));
        else if (payload.startsWith(ACTIONS_PREFIX)) this.runners.get(payload.slice(ACTIONS_PREFIX.length))?.wakeActions();
        else this.runners.get(payload)?.wakeDispatch();
      }),
    );
    this.rounds.start();
    this.duePoll.start();
  }

  /** Whether this worker has heard that the job was cancelled (lately). */
  jobCancelled(jobId: string): boolean {
    return this.cancelledJobs.has(jobId);
  }

  /** Remembered for longer than any claimed batch waits to be handed over. */
  private noteCancelled(jobId: string): void {
    const now = Date.now();
    for (const [id, until] of this.cancelledJobs) if (until < now) this.cancelledJobs.delete(id);
    this.cancelledJobs.set(jobId, now + CANCEL_MEMORY_MS);
  }

  /** Runs a lease round now, or right after the one in progress. */
  tick(): void {
    this.rounds.wake();
  }

  private async duePollTurn(): Promise<number> {
    const idle = [...this.runners].filter(([, runner]) => runner.idle).map(([id]) => id);
    for (const id of await this.queue.devicesWithDue(idle)) this.runners.get(id)?.wakeDispatch();
    return DUE_POLL_MS;
  }

  /** One lease round every LEASE_MS / 3 (counted from the start of the previous one). */
  private async leaseTurn(signal: AbortSignal): Promise<number> {
    const startedAt = Date.now();
    await this.leaseRound(signal);
    return Math.max(0, this.roundEveryMs - (Date.now() - startedAt));
  }

  /**
   * Renews what this worker holds, then moves it toward its fair share (devices / live workers,
   * capped by MAX_DEVICES_PER_WORKER): takes free or expired leases up to it, or, holding more
   * than a tenth beyond it, gives the surplus back and wakes the other workers to take it. A
   * worker that joins thereby gets its share within one round of the others; one that dies stops
   * counting when its heartbeat lapses, as its leases do (LEASE_MS).
   */
  private async leaseRound(signal: AbortSignal): Promise<void> {
    const startedAt = Date.now();
    const leaseMs = this.config.leaseMs;
    await this.renewLeases(leaseMs);
    this.leaseValidUntil = startedAt + leaseMs - Math.min(2_000, leaseMs / 5);
    const { share } = await this.devices.heartbeat(this.workerId, leaseMs);
    const target = Math.min(this.config.maxDevicesPerWorker, share);
    if (signal.aborted) return;
    if (this.runners.size > target + Math.floor(target / 10)) {
      await this.giveBack(this.runners.size - target);
      return;
    }
    if (this.runners.size >= target) return;
    const acquired = await this.devices.acquireLeases(this.workerId, leaseMs, target - this.runners.size);
    const pending = [...acquired];
    const opener = async (): Promise<void> => {
      while (pending.length > 0 && !signal.aborted) await this.startRunner(pending.shift()!);
    };
    await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, pending.length) }, opener));
    // Leases taken but not opened because the worker is stopping go back at once.
    for (const device of pending) await this.devices.releaseLease(device.id, this.workerId);
  }

  /** Closes `count` sessions (the latest opened) and frees their leases for a worker below its share. */
  private async giveBack(count: number): Promise<void> {
    const ids = this.ownedDevices.slice(-count);
    this.log.info({ devices: ids.length, holding: this.runners.size }, 'giving devices back to balance the workers');
    for (let i = 0; i < ids.length; i += OPEN_CONCURRENCY) {
      await Promise.all(
        ids.slice(i, i + OPEN_CONCURRENCY).map(async (id) => {
          await this.stopRunner(id, false);
          await this.devices.releaseLease(id, this.workerId);
        }),
      );
    }
    await this.bus.publish('waygate_devices', 'new');
  }

  /** Renews what this worker holds; what it no longer holds (or what was removed) stops here. */
  private async renewLeases(leaseMs: number): Promise<void> {
    const owned = this.ownedDevices;
    if (owned.length === 0) return;
    const kept = await this.devices.renewLeases(this.workerId, leaseMs, owned);
    for (const id of owned) {
      if (kept.has(id)) continue;
      // Removed or logged out while this worker still holds it: the session unlinks (logout) and the lease goes.
      const state = await this.devices.leaseState(id);
      const logout = Boolean(state && (state.removed || !isActive(state.status)) && state.lease_owner === this.workerId);
      await this.stopRunner(id, logout);
      if (logout) await this.devices.releaseLease(id, this.workerId);
    }
  }

  /** Takes a device over: what its previous owner left in SENDING goes back to the queue, then its session opens. */
  private async startRunner(device: DeviceInfo): Promise<void> {
    const recovered = await this.queue.recoverDevice(device.id);
    if (recovered > 0) this.log.warn({ deviceId: device.id, recovered }, 'took over a device; requeued messages its previous owner left in SENDING');
    const runner = this.newRunner(device);
    this.runners.set(device.id, runner);
    try {
      await runner.start();
      this.log.info({ deviceId: device.id, status: device.status }, 'device session opened');
    } catch (error) {
      this.log.error({ err: error, deviceId: device.id }, 'could not open the device session');
      this.runners.delete(device.id);
      await this.devices.releaseLease(device.id, this.workerId);
    }
  }

  /** Closes the device's session and opens it again from its row (a new proxy): the lease stays here. */
  private async restartRunner(id: string): Promise<void> {
    try {
      await this.stopRunner(id, false);
      const device = await this.devices.leasedInfo(id, this.workerId);
      if (device) await this.startRunner(device);
    } catch (error) {
      this.log.error({ err: error, deviceId: id }, 'could not reopen the device session');
    }
  }

  private newRunner(device: DeviceInfo): DeviceRunner {
    return new DeviceRunner({
      device,
      network: this.network,
      queue: this.queue,
      devices: this.devices,
      bus: this.bus,
      sendMedia: this.sendMedia,
      media: this.media,
      log: this.log,
      workerId: this.workerId,
      bulkDelayMs: this.config.bulkDelayMs,
      batchSize: this.batchSize,
      leaseValid: () => Date.now() < this.leaseValidUntil,
      jobCancelled: (jobId) => this.jobCancelled(jobId),
      conversations: this.conversations,
      onLoggedOut: (id) => {
        void this.stopRunner(id, false);
      },
    });
  }

  private async stopRunner(id: string, logout: boolean): Promise<void> {
    const runner = this.runners.get(id);
    if (!runner) return;
    this.runners.delete(id);
    await runner.stop({ logout });
  }

  /** Drains: stop claiming, finish in-flight sends, close sessions, release leases. */
  async stop(): Promise<void> {
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    await this.rounds.stop();
    await this.duePoll.stop();
    const ids = this.ownedDevices;
    await Promise.all(ids.map((id) => this.stopRunner(id, false)));
    await this.chats.drain();
    if (ids.length > 0) await this.devices.releaseAllLeases(this.workerId);
    await this.devices.leaveWorkers(this.workerId);
  }
}
