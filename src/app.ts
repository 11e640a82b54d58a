/**
 * Builds the Fastify app. The load order is the architecture: core options and validation,
 * error handling and metrics, OpenAPI, public routes (health, docs), then the authenticated
 * scope (auth, rate limit, resource routes) mounted at / and at /v1. Tests use this without
 * listening (app.inject).
 */
import { randomBytes } from 'node:crypto';
import { ConversationService } from './conversations/conversation-service.js';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from './config.js';
import type { Database } from './platform/database.js';
import { migrationsApplied } from './platform/migrate.js';
import { createBus, type Bus } from './platform/bus.js';
import { AccountService } from './directory/accounts.js';
import { AckWaiter } from './messaging/ack-waiter.js';
import { DeviceService } from './devices/device-service.js';
import { EventService } from './events/event-store.js';
import { IdempotencyService } from './messaging/idempotency.js';
import { BulkJobService, MessageService } from './messaging/send-service.js';
import { InProcessDispatcher, NotifyDispatcher, type DirectSendHost } from './messaging/dispatch.js';
import { createSandboxWorld } from './network/create-network.js';
import type { SandboxWorld } from './network/sandbox/world.js';
import { ContactService } from './directory/contacts.js';
import { GroupService } from './directory/groups.js';
import { Lister } from './platform/listing.js';
import { TokenService } from './directory/tokens.js';
import { WebhookService } from './events/webhook-service.js';
import { GuardedHttp } from './outbound/ssrf.js';
import { installAuth } from './http/auth.js';
import { dashboardPlugin } from './http/dashboard/plugin.js';
import { errorHandlingOptions, installErrorHandler } from './http/error-handler.js';
import { installRateLimit } from './http/rate-limit.js';
import { docsCsp, installSecurityHeaders, securityHeaders } from './http/security-headers.js';
import { installMetrics } from './platform/metrics.js';
import { createLogger } from './platform/logger.js';
import { AccessLog, installAbortLog } from './http/access-log.js';
import { openApiOptions } from './http/openapi.js';
import { parseQuery, redactUrl } from './http/redact.js';
import { createValidatorCompiler } from './http/validation.js';
import { installJsonBodies } from './http/json-bodies.js';
import { installLazySerializers } from './http/serialization.js';
import { withoutTrailingSlash } from './http/trailing-slash.js';
import { healthRoutes } from './http/routes/health.js';
import { registerResourceRoutes } from './http/routes/resources.js';
import { OverviewService } from './messaging/overview-service.js';
import { UploadService } from './media/uploads.js';

const REQUEST_ID_PREFIX = randomBytes(6).toString('base64url');
let requestCount = 0;
/** Unique per process and cheap (a counter after a random prefix): only logs correlate by it. */
const newRequestId = (): string => `req_${REQUEST_ID_PREFIX}${(++requestCount).toString(36)}`;

export interface Services {
  bus: Bus;
  accounts: AccountService;
  tokens: TokenService;
  contacts: ContactService;
  groups: GroupService;
  devices: DeviceService;
  messages: MessageService;
  bulkJobs: BulkJobService;
  idempotency: IdempotencyService;
  events: EventService;
  webhooks: WebhookService;
  conversations: ConversationService;
  overview: OverviewService;
  uploads: UploadService;
  /** The sandbox network's world, when NETWORK=sandbox (its test helpers need it). */
  sandbox: SandboxWorld | undefined;
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** The worker in this process (role all), once it runs: direct sends are handed to it at once (see dispatch.ts). */
  directHost?: () => DirectSendHost | undefined;
  /** false for `--role worker`: no request waits here for a send's acknowledgement (default true). */
  servesApi?: boolean;
}

export function createServices(database: Database, config: Config, options: ServiceOptions = {}): Services {
  const bus = createBus(database);
  const dispatcher = options.directHost ? new InProcessDispatcher(bus, options.directHost) : new NotifyDispatcher(bus);
  const acks = new AckWaiter(bus, options.servesApi !== false);
  // Checks the URLs of webhook endpoints when they are stored (the delivery worker has its own client).
  const http = new GuardedHttp(config.allowPrivateUrls);
  const lister = new Lister(database, config.listingCountCap, config.listingScanCap);
  const devices = new DeviceService(database, bus, { pairingCodes: config.network === 'whatsapp' });
  const webhooks = new WebhookService(database, http, lister, bus);
  return {
    bus,
    accounts: new AccountService(database),
    tokens: new TokenService(database, bus),
    contacts: new ContactService(database),
    groups: new GroupService(database),
    devices,
    messages: new MessageService(database, acks, config.sendWaitMs, lister, dispatcher),
    bulkJobs: new BulkJobService(database, lister),
    idempotency: new IdempotencyService(database),
    events: new EventService(database),
    webhooks,
    conversations: new ConversationService(database, bus, config.listingCountCap),
    overview: new OverviewService(database, config, devices, webhooks),
    uploads: new UploadService(database, config.publicUrl, config.mediaRetentionDays),
    sandbox: config.network === 'sandbox' ? createSandboxWorld(config, database, bus) : undefined,
    async close() {
      acks.close();
      await http.close();
      await bus.close();
    },
  };
}

export interface BuildAppOptions {
  config: Config;
  database: Database;
  services?: Services;
  /** false for `--role worker`: no public API routes. */
  apiRoutes?: boolean;
  /** Where log lines go (default stdout); tests pass a stream to read them. */
  logStream?: NonNullable<Exclude<FastifyServerOptions['logger'], boolean>>['stream'];
  /** The process's logger (`serve` makes it before the app, to log the migrations); one is made from config otherwise. */
  logger?: Logger;
}

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config, database } = options;
  const ownServices = options.services === undefined;
  const services = options.services ?? createServices(database, config);

  const decorate = securityHeaders({ publicUrl: config.publicUrl });
  const logger = options.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, ...(options.logStream ? { stream: options.logStream } : {}) });
  const app = Fastify({
    loggerInstance: logger.child(
      {},
      { serializers: { req: (request: FastifyRequest) => ({ method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }) } },
    ) as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    genReqId: newRequestId,
    requestIdHeader: false,
    // One line a request instead of Fastify's two.
    logController: new AccessLog(),
    // Only the configured proxies may name the client's address and protocol (TRUST_PROXY).
    trustProxy: config.trustProxy,
    // Headers and body must arrive within requestTimeout; Node checks every connection on an
    // interval, so it is kept well under the timeout to cut a stalled request promptly.
    // connectionTimeout stays off: an answer may rightly take long (a direct send waits for the
    // network's acknowledgement, an event stream stays open), and idle keep-alive sockets are
    // closed by keepAliveTimeout.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(config.requestTimeoutMs / 4))),
    },
    rewriteUrl: (request) => withoutTrailingSlash(request.url ?? '/'),
    routerOptions: {
      // Long path segments reach the schemas (ids have at most 100 characters: a 400 naming the
      // field); beyond this the router itself answers 414.
      maxParamLength: 1_000,
      // The same parser reads the token and redacts it from log lines.
      querystringParser: parseQuery,
    },
    ...errorHandlingOptions(newRequestId, decorate),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(createValidatorCompiler());
  installLazySerializers(app);
  app.decorateRequest('auth', null);
  app.decorateRequest('authError', null);
  installSecurityHeaders(app, decorate);
  installAbortLog(app);
  installErrorHandler(app);
  const registry = installMetrics(app, database);

  await app.register(swagger, openApiOptions(config));
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, transformStaticCSP: docsCsp });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, {
    ready: () => migrationsApplied(database),
    metrics: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
    metricsToken: config.metricsToken,
  });

  installJsonBodies(app);
  app.addContentTypeParser('text/csv', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  // One limiter shared by / and /v1 and the dashboard (see rate-limit.ts).
  const limit = options.apiRoutes !== false ? await installRateLimit(app, config, database) : undefined;

  const api = async (scope: FastifyInstance): Promise<void> => {
    installAuth(scope, services.tokens, limit);
    await registerResourceRoutes(scope, services, database);
  };
  // A worker-only process serves just the ops routes (health, readiness, metrics).
  if (options.apiRoutes !== false) {
    await app.register(api);
    await app.register(api, { prefix: '/v1' });
    // The dashboard: the same resource routes behind a session cookie, and the built web app.
    await app.register(dashboardPlugin, { config, database, services, limit });
  }

  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect(options.apiRoutes !== false ? '/dashboard/' : '/docs'));
  if (ownServices) app.addHook('onClose', async () => services.close());
  return app;
}
