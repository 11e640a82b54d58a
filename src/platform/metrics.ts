/**
 * Prometheus metrics. One registry per process (prom-client metrics are registered once);
 * every app built in the process adds its request hooks to it. Gauges that describe the shared
 * state (queue depth, devices by state) are read from the database at scrape time with cheap,
 * index-backed queries; counters count what this process did.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Database } from './database.js';
import { countWaiting } from '../messaging/queue-store.js';
import { countDevicesByStatus } from '../devices/device-store.js';
import { countPendingDeliveries } from '../events/webhook-store.js';
import { countRunningJobs } from '../messaging/job-store.js';
import { NODE_VERSION, VERSION } from './build-info.js';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'waygate_' });

const requests = new Counter({
  name: 'waygate_http_requests_total',
  help: 'HTTP requests answered, by method, route and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});
const duration = new Histogram({
  name: 'waygate_http_request_duration_seconds',
  help: 'HTTP request latency, by method and route',
  labelNames: ['method', 'route'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  registers: [registry],
});

/** Messages this process moved into a state (accepted, SENT, FAILED, DELIVERED, READ, …). */
export const messageTransitions = new Counter({
  name: 'waygate_messages_total',
  help: 'Messages this process moved into each status',
  labelNames: ['status'] as const,
  registers: [registry],
});

/** Webhook delivery attempts this process made, by result. */
export const webhookAttempts = new Counter({
  name: 'waygate_webhook_attempts_total',
  help: 'Webhook delivery attempts, by result (delivered, failed, gone, error)',
  labelNames: ['result'] as const,
  registers: [registry],
});

/** Webhook delivery attempts' duration (request sent → answer or failure), whatever the result. */
export const webhookAttemptSeconds = new Histogram({
  name: 'waygate_webhook_attempt_duration_seconds',
  help: 'Webhook delivery attempts: time from sending the request to the answer (or the failure)',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
  registers: [registry],
});

/** A message handed to the network → the network's acknowledgement (SENT), on this worker. */
export const sendAckSeconds = new Histogram({
  name: 'waygate_send_ack_duration_seconds',
  help: 'Outgoing messages: time from handing a message to the network to its acknowledgement (SENT)',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  registers: [registry],
});

/** Messages this process ended FAILED, by the error code on their record. */
export const messageFailures = new Counter({
  name: 'waygate_message_failures_total',
  help: 'Messages this process ended FAILED, by error code',
  labelNames: ['code'] as const,
  registers: [registry],
});

/** Which build runs: always 1, the facts are in the labels. */
new Gauge({
  name: 'waygate_build_info',
  help: 'The Waygate version and the Node.js running it (value 1)',
  labelNames: ['version', 'node'] as const,
  registers: [registry],
}).set({ version: VERSION, node: NODE_VERSION }, 1);

/** The databases of the apps open in this process; gauges read the most recent one. */
const databases: Database[] = [];

/** Reads a gauge's value from the database; a failure leaves the gauge as it was (a scrape must not fail). */
async function fromDatabase<T>(read: (database: Database) => Promise<T>): Promise<T | undefined> {
  const database = databases[databases.length - 1];
  if (!database) return undefined;
  try {
    return await read(database);
  } catch {
    return undefined;
  }
}

new Gauge({
  name: 'waygate_queue_depth',
  help: 'Messages waiting to be sent whose time has come (QUEUED, or SCHEDULED and due)',
  registers: [registry],
  async collect() {
    const n = await fromDatabase((db) => countWaiting(db, 'due'));
    if (n !== undefined) this.set(n);
  },
});

new Gauge({
  name: 'waygate_scheduled_messages',
  help: 'Messages waiting for a time in the future',
  registers: [registry],
  async collect() {
    const n = await fromDatabase((db) => countWaiting(db, 'scheduled'));
    if (n !== undefined) this.set(n);
  },
});

new Gauge({
  name: 'waygate_devices',
  help: 'Linked devices by state (removed ones excluded)',
  labelNames: ['status'] as const,
  registers: [registry],
  async collect() {
    const rows = await fromDatabase(countDevicesByStatus);
    if (!rows) return;
    this.reset();
    for (const status of ['PENDING', 'CONNECTED', 'DISCONNECTED', 'LOGGED_OUT']) this.set({ status }, rows.find((r) => r.status === status)?.n ?? 0);
  },
});

new Gauge({
  name: 'waygate_webhook_backlog',
  help: 'Webhook deliveries waiting to be delivered (PENDING: first attempts and retries)',
  registers: [registry],
  async collect() {
    const n = await fromDatabase(countPendingDeliveries);
    if (n !== undefined) this.set(n);
  },
});

new Gauge({
  name: 'waygate_bulk_jobs_running',
  help: 'Bulk jobs PROCESSING (every account)',
  registers: [registry],
  async collect() {
    const n = await fromDatabase(countRunningJobs);
    if (n !== undefined) this.set(n);
  },
});

export function installMetrics(app: FastifyInstance, database: Database): Registry {
  databases.push(database);
  app.addHook('onClose', async () => {
    databases.splice(databases.lastIndexOf(database), 1);
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  return registry;
}
