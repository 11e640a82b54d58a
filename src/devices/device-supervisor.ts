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
import { DeviceRunner } from './device-runner.js';
import { MessageQueue, type ClaimedMessage } from '../messaging/message-queue.js';
import type { DirectSendHost } from '../messaging/send-service.js';

const MAX_DEVICES_PER_WORKER = 500;
const CANCEL_MEMORY_MS = 10 * 60_000;

export function newWorkerId(): string {
  return `wkr_${os.hostname()}_${process.pid}_${randomBytes(3).toString('hex')}`;
}

export class DeviceSupervisor implements DirectSendHost {
  readonly workerId: string;
  private readonly runners = new Map<string, DeviceRunner>();
  private readonly queue: MessageQueue;
  private readonly batchSize: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private leaseValidUntil = 0;
  private readonly unsubscribers: (() => void)[] = [];
  /** Jobs cancelled lately (id → until when it is remembered): their claimed messages are not handed over. */
  private readonly cancelledJobs = new Map<string, number>();

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly network: Network,
    private readonly http: GuardedHttp,
    private readonly config: Config,
    private readonly log: Logger,
    workerId: string = newWorkerId(),
  ) {
    this.workerId = workerId;
    this.queue = new MessageQueue(database, workerId, config.sendMaxAttempts, () => bus.local('waygate_webhooks', 'due'));
    this.batchSize = workBudget(database).dispatchBatch;
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
      .then(() => this.bus.publishSoon('waygate_dispatch', deviceId))
      .catch((error: unknown) => this.log.error({ err: error, deviceId }, 'could not put direct sends back in the queue'));
  }

  start(): void {
    this.stopped = false;
    this.unsubscribers.push(
      this.bus.subscribe('waygate_devices', (payload) => {
        const [kind, id] = payload.includes(':') ? payload.split(':') : ['new', payload];
        if (kind === 'reconnect' && id && this.runners.has(id)) void this.runners.get(id)!.reconnectNow();
        if (kind === 'new' || kind === 'logout' || kind === 'reconnect') this.tick();
      }),
      this.bus.subscribe('waygate_dispatch', (payload) => {
        if (payload.startsWith('cancel:')) this.noteCancelled(payload.slice('cancel:'.length));
        else this.runners.get(payload)?.wake();
      }),
    );
    this.timer = setInterval(() => this.tick(), Math.max(250, Math.floor(this.config.leaseMs / 3)));
    this.tick();
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
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.leaseRound()
      .catch((error: unknown) => this.log.error({ err: error }, 'lease round failed'))
      .finally(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          this.tick();
        }
      });
  }

  private async leaseRound(): Promise<void> {
    const startedAt = Date.now();
    const leaseMs = this.config.leaseMs;
    // Renew what we hold; what we no longer hold (or what was removed) stops here.
    const owned = this.ownedDevices;
    if (owned.length > 0) {
      const kept = await this.database.query<{ id: string }>(
        `UPDATE devices SET lease_expires_at = now() + $2 * interval '1 millisecond'
          WHERE lease_owner = $1 AND id = ANY($3::text[]) AND removed_at IS NULL AND status <> 'LOGGED_OUT' RETURNING id`,
        [this.workerId, leaseMs, owned],
      );
      const keptIds = new Set(kept.map((row) => row.id));
      for (const id of owned) {
        if (keptIds.has(id)) continue;
        const [state] = await this.database.query<{ removed: boolean; status: string; lease_owner: string | null }>(
          'SELECT removed_at IS NOT NULL AS removed, status, lease_owner FROM devices WHERE id = $1',
          [id],
        );
        const logout = Boolean(state && (state.removed || state.status === 'LOGGED_OUT') && state.lease_owner === this.workerId);
        await this.stopRunner(id, logout);
        if (logout) await this.database.query('UPDATE devices SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2', [id, this.workerId]);
      }
    }
    this.leaseValidUntil = startedAt + leaseMs - Math.min(2_000, leaseMs / 5);

    if (this.stopped || this.runners.size >= MAX_DEVICES_PER_WORKER) return;
    const acquired = await this.database.query<{ id: string; account_id: string; phone_number: string | null; status: DeviceInfo['status'] }>(
      `UPDATE devices d SET lease_owner = $1, lease_expires_at = now() + $2 * interval '1 millisecond'
        WHERE d.id IN (SELECT id FROM devices
                        WHERE removed_at IS NULL AND status <> 'LOGGED_OUT' AND (lease_owner IS NULL OR lease_expires_at < now())
                        ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING d.id, d.account_id, d.phone_number, d.status`,
      [this.workerId, leaseMs, MAX_DEVICES_PER_WORKER - this.runners.size],
    );
    for (const device of acquired) {
      if (this.stopped) break;
      const recovered = await this.queue.recoverDevice(device.id);
      if (recovered > 0) this.log.warn({ deviceId: device.id, recovered }, 'took over a device; requeued messages its previous owner left in SENDING');
      const runner = new DeviceRunner({
        device: { id: device.id, accountId: device.account_id, phoneNumber: device.phone_number, status: device.status },
        network: this.network,
        queue: this.queue,
        database: this.database,
        bus: this.bus,
        http: this.http,
        log: this.log,
        workerId: this.workerId,
        bulkDelayMs: this.config.bulkDelayMs,
        batchSize: this.batchSize,
        leaseValid: () => Date.now() < this.leaseValidUntil,
        jobCancelled: (jobId) => this.jobCancelled(jobId),
        onLoggedOut: (id) => {
          void this.stopRunner(id, false);
        },
      });
      this.runners.set(device.id, runner);
      try {
        await runner.start();
        this.log.info({ deviceId: device.id, status: device.status }, 'device session opened');
      } catch (error) {
        this.log.error({ err: error, deviceId: device.id }, 'could not open the device session');
        this.runners.delete(device.id);
        await this.database.query('UPDATE devices SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2', [device.id, this.workerId]);
      }
    }
  }

  private async stopRunner(id: string, logout: boolean): Promise<void> {
    const runner = this.runners.get(id);
    if (!runner) return;
    this.runners.delete(id);
    await runner.stop({ logout });
  }

  /** Drains: stop claiming, finish in-flight sends, close sessions, release leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    await this.ticking;
    const ids = this.ownedDevices;
    await Promise.all(ids.map((id) => this.stopRunner(id, false)));
    if (ids.length > 0) {
      await this.database.query('UPDATE devices SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1', [this.workerId]);
    }
  }
}
