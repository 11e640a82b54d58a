/**
 * The worker role: device sessions and dispatch (DeviceSupervisor), bulk fan-out, and
 * housekeeping. start() and stop() are explicit; stop() drains.
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Bus } from './platform/bus.js';
import type { Database } from './platform/database.js';
import { createNetwork } from './network/create-network.js';
import type { Network } from './network/network.js';
import { GuardedHttp } from './outbound/ssrf.js';
import { BulkFanout } from './messaging/bulk-fanout.js';
import { DeviceSupervisor } from './devices/device-supervisor.js';
import { WebhookDelivery } from './events/webhook-delivery.js';
import { Housekeeping } from './housekeeping.js';

export class WorkerRuntime {
  private network: Network | undefined;
  private http: GuardedHttp | undefined;
  supervisor: DeviceSupervisor | undefined;
  private fanout: BulkFanout | undefined;
  private webhooks: WebhookDelivery | undefined;
  private housekeeping: Housekeeping | undefined;

  constructor(
    private readonly config: Config,
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.network = await createNetwork(this.config, this.database, this.bus, this.log);
    this.http = new GuardedHttp(this.config.allowPrivateUrls);
    this.supervisor = new DeviceSupervisor(this.database, this.bus, this.network, this.http, this.config, this.log);
    this.fanout = new BulkFanout(this.database, this.bus, this.log);
    this.webhooks = new WebhookDelivery(this.database, this.bus, this.http, this.log, {
      retryScheduleMs: this.config.webhookRetryScheduleMs,
      timeoutMs: this.config.webhookTimeoutMs,
      workerId: this.supervisor.workerId,
    });
    this.supervisor.start();
    this.fanout.start();
    this.webhooks.start();
    this.housekeeping = new Housekeeping(this.database, this.config, this.log);
    this.housekeeping.start();
    this.log.info({ workerId: this.supervisor.workerId, network: this.network.kind }, 'worker started');
  }

  async stop(): Promise<void> {
    await this.housekeeping?.stop();
    await this.fanout?.stop();
    await this.supervisor?.stop();
    await this.webhooks?.stop();
    await this.network?.close();
    await this.http?.close();
  }
}
