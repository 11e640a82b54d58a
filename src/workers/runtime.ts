/**
 * The worker role: device sessions and dispatch (DeviceSupervisor), bulk fan-out, and
 * housekeeping. start() and stop() are explicit; stop() drains.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Bus } from '../db/bus.js';
import type { Database } from '../db/client.js';
import { IdempotencyService } from '../domain/idempotency.js';
import { createNetwork } from '../network/create-network.js';
import type { Network } from '../network/network.js';
import { GuardedHttp } from '../outbound/ssrf.js';
import { BulkFanout } from './bulk-fanout.js';
import { DeviceSupervisor } from './device-supervisor.js';

const HOUSEKEEPING_MS = 10 * 60_000;

export class WorkerRuntime {
  private network: Network | undefined;
  private http: GuardedHttp | undefined;
  supervisor: DeviceSupervisor | undefined;
  private fanout: BulkFanout | undefined;
  private housekeeping: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: Config,
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.network = await createNetwork(this.config, this.database, this.bus);
    this.http = new GuardedHttp(this.config.allowPrivateUrls);
    this.supervisor = new DeviceSupervisor(this.database, this.bus, this.network, this.http, this.config, this.log);
    this.fanout = new BulkFanout(this.database, this.bus, this.log);
    this.supervisor.start();
    this.fanout.start();
    const idempotency = new IdempotencyService(this.database);
    this.housekeeping = setInterval(() => {
      void idempotency.purgeExpired().catch((error: unknown) => this.log.warn({ err: error }, 'housekeeping failed'));
    }, HOUSEKEEPING_MS);
    this.housekeeping.unref();
    this.log.info({ workerId: this.supervisor.workerId, network: this.network.kind }, 'worker started');
  }

  async stop(): Promise<void> {
    if (this.housekeeping) clearInterval(this.housekeeping);
    await this.fanout?.stop();
    await this.supervisor?.stop();
    await this.network?.close();
    await this.http?.close();
  }
}
