/**
 * Builds the Fastify app. The load order is the architecture: core options and validation,
 * error handling and metrics, OpenAPI, public routes (health, docs), then the authenticated
 * scope (auth, rate limit, resource routes) mounted at / and at /v1. Tests use this without
 * listening (app.inject).
 */
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import rateLimit from '@fastify/rate-limit';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Config } from './config.js';
import type { Database } from './db/client.js';
import { migrationsApplied } from './db/migrate.js';
import { createBus, type Bus } from './db/bus.js';
import { AccountService } from './domain/accounts.js';
import { AckWaiter } from './domain/ack-waiter.js';
import { DeviceService } from './domain/devices.js';
import { EventService } from './domain/events.js';
import { IdempotencyService } from './domain/idempotency.js';
import { BulkJobService, MessageService } from './domain/messages.js';
import { createSandboxWorld } from './network/create-network.js';
import type { SandboxWorld } from './network/sandbox/world.js';
import { ContactService } from './domain/contacts.js';
import { GroupService } from './domain/groups.js';
import { Lister } from './domain/listing.js';
import { TokenService } from './domain/tokens.js';
import { WebhookService } from './domain/webhooks.js';
import { GuardedHttp } from './outbound/ssrf.js';
import { AppError } from './errors.js';
import { installAuth } from './http/auth.js';
import { dashboardPlugin } from './http/dashboard/plugin.js';
import { installErrorHandler } from './http/error-handler.js';
import { installMetrics } from './metrics.js';
import { redactUrl } from './http/redact.js';
import { healthRoutes } from './http/routes/health.js';
import { registerResourceRoutes } from './http/routes/resources.js';

const REQUEST_ID_PREFIX = randomBytes(6).toString('base64url');
let requestCount = 0;

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

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
  /** The sandbox network's world, when NETWORK=sandbox (its test helpers need it). */
  sandbox: SandboxWorld | undefined;
  close(): Promise<void>;
}

export function createServices(database: Database, config: Config): Services {
  const bus = createBus(database);
  const acks = new AckWaiter(bus);
  // Checks the URLs of webhook endpoints when they are stored (the delivery worker has its own client).
  const http = new GuardedHttp(config.allowPrivateUrls);
  const lister = new Lister(database, config.listingCountCap);
  return {
    bus,
    accounts: new AccountService(database),
    tokens: new TokenService(database, bus),
    contacts: new ContactService(database),
    groups: new GroupService(database),
    devices: new DeviceService(database, bus, { pairingCodes: config.network === 'whatsapp' }),
    messages: new MessageService(database, bus, acks, config.sendWaitMs, lister),
    bulkJobs: new BulkJobService(database, lister),
    idempotency: new IdempotencyService(database),
    events: new EventService(database),
    webhooks: new WebhookService(database, http, lister, bus),
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
}

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false });
  addFormats(ajv);
  return ajv;
}

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config, database } = options;
  const ownServices = options.services === undefined;
  const services = options.services ?? createServices(database, config);

  const app = Fastify({
    logger: {
      level: config.logLevel,
      ...(options.logStream ? { stream: options.logStream } : {}),
      serializers: {
        req: (request) => ({ method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }),
      },
    },
    bodyLimit: config.bodyLimitBytes,
    // Unique per process and cheap (a counter after a random prefix): only logs correlate by it.
    genReqId: () => `req_${REQUEST_ID_PREFIX}${(++requestCount).toString(36)}`,
    requestIdHeader: false,
    trustProxy: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are validated strictly (a string is not a number); query and path values arrive as
  // text and are coerced to the schema's types.
  const bodyAjv = makeAjv(false);
  const paramAjv = makeAjv('array');
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema));

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installErrorHandler(app);
  const registry = installMetrics(app, database);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Waygate API',
        version: '1.0.0',
        description:
          'Self-hostable messaging gateway. Every path is served identically at `/PATH` and `/v1/PATH`. ' +
          'Authenticate with the `x-api-key` header (or the less secure `token` query parameter). ' +
          'Errors: `{success:false, error:{code,message,details?}, requestId}`.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          queryToken: { type: 'apiKey', in: 'query', name: 'token' },
        },
      },
      security: [{ apiKey: [] }, { queryToken: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, {
    ready: () => migrationsApplied(database),
    metrics: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  });

  app.addContentTypeParser('text/csv', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  // One limiter (one in-memory store) shared by / and /v1, keyed by account: the hook runs in
  // the authenticated scope after the auth hook has resolved the account.
  const limitRate = config.rateLimitPerMinute > 0;
  if (limitRate) {
    await app.register(rateLimit, {
      global: false,
      max: config.rateLimitPerMinute,
      timeWindow: 60_000,
      enableDraftSpec: true,
      keyGenerator: (request) => request.auth?.accountId ?? request.ip,
      errorResponseBuilder: (_request, context) =>
        new AppError('RATE_LIMITED', `Too many requests: the limit is ${context.max} per minute; retry in ${Math.ceil(context.ttl / 1000)} s`, {
          limit: context.max,
          retryAfterSeconds: Math.ceil(context.ttl / 1000),
        }),
    });
  }

  const api = async (scope: FastifyInstance): Promise<void> => {
    installAuth(scope, services.tokens);
    if (limitRate) scope.addHook('onRequest', scope.rateLimit());
    await registerResourceRoutes(scope, services, database);
  };
  // A worker-only process serves just the ops routes (health, readiness, metrics).
  if (options.apiRoutes !== false) {
    await app.register(api);
    await app.register(api, { prefix: '/v1' });
    // The dashboard: the same resource routes behind a session cookie, and the built web app.
    await app.register(dashboardPlugin, { config, database, services, limitRate });
  }

  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect(options.apiRoutes !== false ? '/dashboard/' : '/docs'));
  if (ownServices) app.addHook('onClose', async () => services.close());
  return app;
}
