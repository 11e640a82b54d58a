/**
 * The dashboard's JSON API at /dashboard/api: sign-up, log-in, log-out and the session, then the
 * very same resource routes as the public API (accounts, tokens, contacts, groups, devices,
 * messages, webhooks, events, sandbox), mounted behind a session cookie instead of a token, so
 * the dashboard has no business logic of its own. A session acts for its account with every
 * scope. State-changing requests need the session's CSRF token in `x-csrf-token`, and any
 * request that a browser marks as cross-site is refused.
 */
import Type, { type Static } from 'typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Services } from '../../app.js';
import type { Config } from '../../config.js';
import type { Database } from '../../platform/database.js';
import type { DashboardSession, DashboardSessionService, NewSession } from '../../directory/dashboard-sessions.js';
import { sameSecret } from '../../directory/dashboard-sessions.js';
import { TOKEN_SCOPES } from '../../directory/tokens.js';
import { AppError } from '../../platform/errors.js';
import { installCredentialHooks } from '../auth.js';
import { deviceStream, type StreamRegistry } from './stream.js';
import { registerResourceRoutes } from '../routes/resources.js';

declare module 'fastify' {
  interface FastifyRequest {
    dashboard: DashboardSession | null;
  }
}

export const SESSION_COOKIE = 'waygate_session';
export const COOKIE_PATH = '/dashboard';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const ALL_SCOPES: ReadonlySet<string> = new Set(TOKEN_SCOPES);

export interface DashboardApiOptions {
  config: Config;
  database: Database;
  services: Services;
  sessions: DashboardSessionService;
  streams: StreamRegistry;
  /** The public API's rate limit (per account with a session, per address without), when it is on. */
  limit: onRequestHookHandler | undefined;
}

/** The session named by the request's cookie, or null. */
export async function sessionOf(request: FastifyRequest, sessions: DashboardSessionService): Promise<DashboardSession | null> {
  const value = request.cookies[SESSION_COOKIE];
  return value ? sessions.find(value) : null;
}

/**
 * Refuses requests a browser made on another site's behalf: `Sec-Fetch-Site: cross-site` or an
 * `Origin` that is not this host. (Non-browser clients send neither and are judged by the
 * session and CSRF token alone.)
 */
function assertSameOrigin(request: FastifyRequest): void {
  if (request.headers['sec-fetch-site'] === 'cross-site') throw new AppError('FORBIDDEN', 'Cross-site requests to the dashboard are refused');
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let same = false;
  try {
    // Through URL on both sides, so a default port written out (":443") compares equal.
    same = new URL(origin).host === new URL(`${request.protocol}://${request.host}`).host;
  } catch {
    same = false;
  }
  if (!same) throw new AppError('FORBIDDEN', 'Cross-origin requests to the dashboard are refused');
}

const Credentials = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

const SessionView = Type.Object({
  authenticated: Type.Boolean(),
  signupOpen: Type.Boolean(),
  /** No user exists yet: whoever signs up now runs the installation. */
  freshInstall: Type.Boolean(),
  /** Sign-up now needs the setup code printed in the server's log (a fresh install listening beyond loopback). */
  setupCodeRequired: Type.Boolean(),
  network: Type.String(),
  tokenScopes: Type.Array(Type.String()),
  user: Type.Union([Type.Object({ email: Type.String(), accountId: Type.String() }), Type.Null()]),
  csrfToken: Type.Union([Type.String(), Type.Null()]),
});

export const dashboardApi: FastifyPluginAsyncTypebox<DashboardApiOptions> = async (app, options) => {
  // These routes are the dashboard's own: they stay out of the public OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    if (!SAFE_METHODS.has(request.method)) assertSameOrigin(request);
  });
  // Open to anyone, so limited per client address (log-in has its own throttle besides).
  await app.register(async (scope) => openRoutes(scope, options));
  // Everything below needs a session (and, to change anything, its CSRF token).
  await app.register(async (scope: FastifyInstance) => sessionRoutes(scope, options));
  // Unknown /dashboard/api paths answer like the public API, not with the single-page app.
  app.all('/*', async (request) => {
    throw new AppError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`);
  });
};

/** What the dashboard shows of a session (or of none), and whether sign-up is open. */
async function view(options: DashboardApiOptions, session: DashboardSession | null): Promise<Static<typeof SessionView>> {
  return {
    authenticated: session !== null,
    signupOpen: await options.sessions.signupOpen(),
    freshInstall: !(await options.services.accounts.hasUsers()),
    setupCodeRequired: await options.sessions.setupCodeRequired(),
    network: options.config.network,
    tokenScopes: [...TOKEN_SCOPES],
    user: session ? { email: session.email, accountId: session.accountId } : null,
    csrfToken: session?.csrfToken ?? null,
  };
}

function setCookie(options: DashboardApiOptions, request: FastifyRequest, reply: FastifyReply, created: NewSession): void {
  reply.setCookie(SESSION_COOKIE, created.cookieValue, {
    path: COOKIE_PATH,
    httpOnly: true,
    sameSite: 'lax',
    secure: options.config.publicUrl.startsWith('https://') || request.protocol === 'https',
    expires: created.session.expiresAt,
  });
}

/** The session, sign-up and log-in: open to anyone. */
function openRoutes(scope: FastifyInstance, options: DashboardApiOptions): void {
  const { sessions } = options;
  const open = scope.withTypeProvider<TypeBoxTypeProvider>();
  if (options.limit) open.addHook('onRequest', options.limit);

  open.get('/session', { schema: { response: { 200: SessionView } } }, async (request) => view(options, await sessionOf(request, sessions)));

  open.post(
    '/signup',
    {
      schema: {
        body: Type.Object(
          { ...Credentials.properties, name: Type.Optional(Type.String({ maxLength: 200 })), setupCode: Type.Optional(Type.String({ maxLength: 100 })) },
          { additionalProperties: false },
        ),
        response: { 201: SessionView },
      },
    },
    async (request, reply) => {
      const created = await sessions.signup(request.body);
      setCookie(options, request, reply, created);
      return reply.status(201).send(await view(options, created.session));
    },
  );

  open.post('/login', { schema: { body: Credentials, response: { 200: SessionView } } }, async (request, reply) => {
    const created = await sessions.login({ ...request.body, ip: request.ip });
    setCookie(options, request, reply, created);
    return view(options, created.session);
  });
}

/** Log-out, the device stream and every resource route, behind the session cookie and (to change anything) its CSRF token. */
async function sessionRoutes(scope: FastifyInstance, options: DashboardApiOptions): Promise<void> {
  const { sessions, services } = options;
  installCredentialHooks(
    scope,
    async (request) => {
      const session = await sessionOf(request, sessions);
      if (!session) {
        request.authError = new AppError('UNAUTHORIZED', 'Not signed in, or the session has expired: log in again');
        return;
      }
      request.dashboard = session;
      request.auth = { accountId: session.accountId, tokenId: `session:${session.userId}`, scopes: ALL_SCOPES };
      if (!SAFE_METHODS.has(request.method)) {
        const sent = request.headers['x-csrf-token'];
        if (typeof sent !== 'string' || !sameSecret(sent, session.csrfToken)) {
          request.authError = new AppError('FORBIDDEN', 'Missing or wrong CSRF token (x-csrf-token): reload the page and try again');
        }
      }
    },
    options.limit,
  );

  scope.post('/logout', async (request, reply) => {
    await sessions.logout(request.cookies[SESSION_COOKIE]!);
    reply.clearCookie(SESSION_COOKIE, { path: COOKIE_PATH });
    return { success: true as const };
  });
  scope.get('/stream', (request, reply) => deviceStream(request, reply, services, options.streams));

  await registerResourceRoutes(scope, services, options.database);
}
