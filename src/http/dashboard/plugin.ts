/**
 * The dashboard: its JSON API at /dashboard/api (see api.ts) and the built single-page app
 * (dashboard/dist, made by `npm run build`) at /dashboard. Hashed assets are cached for a year;
 * index.html is never cached, so a new build shows at the next load. Any other path under
 * /dashboard is the app's own route: it gets index.html, or a redirect to the log-in page when
 * there is no session.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify';
import type { Services } from '../../app.js';
import type { Config } from '../../config.js';
import type { Database } from '../../platform/database.js';
import { DashboardSessionService, DEFAULT_SESSION_LIMITS, type SessionLimits } from '../../directory/dashboard-sessions.js';
import { dashboardApi, sessionOf } from './api.js';
import { StreamRegistry } from './stream.js';

/** dashboard/dist beside src/ (tsx) or dist/ (built): both sit two folders below the package root. */
export const DASHBOARD_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dashboard/dist');

/** Pages anyone may open without a session. */
const PUBLIC_PAGES = new Set(['login', 'signup']);

/** The app page's policy; the other security headers are every answer's (security-headers.ts). */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
};

export interface DashboardOptions {
  config: Config;
  database: Database;
  services: Services;
  /** The request rate limit's hook (see rate-limit.ts), when it is on. */
  limit: onRequestHookHandler | undefined;
  /** Where the built app is (tests may point elsewhere). */
  distDir?: string;
  sessionLimits?: SessionLimits;
}

export async function dashboardPlugin(app: FastifyInstance, options: DashboardOptions): Promise<void> {
  const distDir = options.distDir ?? DASHBOARD_DIST;
  const sessions = new DashboardSessionService(
    options.database,
    options.services.accounts,
    options.config.dashboardSignup,
    options.sessionLimits ?? DEFAULT_SESSION_LIMITS,
    options.config.sessionSecret,
    options.config.setupCodeRequired,
  );
  const streams = new StreamRegistry();
  // Open event streams would hold the server open: end them as the app closes.
  app.addHook('preClose', async () => streams.closeAll());

  await app.register(cookie);
  app.decorateRequest('dashboard', null);
  await app.register(fastifyStatic, { root: distDir, serve: false });
  await app.register(dashboardApi, { ...options, sessions, streams, prefix: '/dashboard/api' });

  const sendIndex = (reply: FastifyReply): FastifyReply => {
    if (!fs.existsSync(path.join(distDir, 'index.html'))) {
      return reply
        .status(503)
        .type('text/plain; charset=utf-8')
        .send('The dashboard is not built. Run `npm run build` (it builds the server and the dashboard), then reload.');
    }
    return reply.headers(PAGE_HEADERS).header('cache-control', 'no-cache').sendFile('index.html', { cacheControl: false });
  };

  app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard/'));
  app.get('/dashboard/*', { schema: { hide: true } }, async (request, reply) => {
    const rest = (request.params as { '*': string })['*'];
    // Files of the build: content-hashed assets never change; anything else is revalidated hourly.
    if (/^[\w.-]+(\/[\w.-]+)*\.[a-z0-9]+$/i.test(rest) && !rest.includes('..') && rest !== 'index.html') {
      if (!fs.existsSync(path.join(distDir, rest))) return reply.callNotFound();
      return rest.startsWith('assets/')
        ? reply.sendFile(rest, { maxAge: '365d', immutable: true })
        : reply.sendFile(rest, { maxAge: '1h' });
    }
    const page = rest.split('/')[0] ?? '';
    if (!PUBLIC_PAGES.has(page) && !(await sessionOf(request, sessions))) {
      const next = `/dashboard/${rest}`;
      return reply.redirect(`/dashboard/login${next === '/dashboard/' ? '' : `?next=${encodeURIComponent(next)}`}`);
    }
    return sendIndex(reply);
  });
}
