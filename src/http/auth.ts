/**
 * Authentication of the public API: `x-api-key: <token>` or `?token=<token>`. Registered only
 * inside the authenticated scope, so public routes (health, docs) never pass through it.
 * The required scope of a route is declared in its `config.scope`. Three steps: read the
 * credentials (an invalid one is remembered, not yet refused), the rate limit (per account, or
 * per client address when there is no valid credential), then refuse what must be refused.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { TokenService, AuthContext, TokenScope } from '../directory/tokens.js';
import { AppError } from '../platform/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    /** Why the credentials were refused; thrown after the rate limit has counted the request. */
    authError: AppError | null;
  }
  interface FastifyContextConfig {
    /** The token scope this route needs. */
    scope?: TokenScope;
  }
}

export const QUERY_TOKEN_WARNING =
  '299 waygate "Passing the API token in the query string is less secure (it can end up in proxy logs and browser history); send it in the x-api-key header"';

/** The authenticated account of a request inside the authenticated scope. */
export function auth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError('UNAUTHORIZED', 'Not authenticated');
  return request.auth;
}

/**
 * Adds the hooks of an authenticated scope: `identify` sets request.auth or request.authError,
 * then the rate limit (when on), then the refusal of a missing or invalid credential and the
 * route's scope check.
 */
export function installCredentialHooks(
  app: FastifyInstance,
  identify: (request: FastifyRequest, reply: Parameters<onRequestHookHandler>[1]) => Promise<void>,
  limit: onRequestHookHandler | undefined,
): void {
  app.addHook('onRequest', identify);
  if (limit) app.addHook('onRequest', limit);
  app.addHook('onRequest', async (request) => {
    if (request.authError) throw request.authError;
    const scope = request.routeOptions.config.scope;
    if (scope && !auth(request).scopes.has(scope)) {
      throw new AppError('FORBIDDEN', `This token does not have the ${scope} scope`, { requiredScope: scope });
    }
  });
}

export function installAuth(app: FastifyInstance, tokens: TokenService, limit: onRequestHookHandler | undefined): void {
  installCredentialHooks(
    app,
    async (request, reply) => {
      const header = request.headers['x-api-key'];
      let token = typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
      const query = request.query as Record<string, unknown>;
      if (query && 'token' in query) {
        const fromQuery = query.token;
        // Removed before validation, so route query schemas stay strict.
        delete query.token;
        if (!token && typeof fromQuery === 'string' && fromQuery !== '') {
          token = fromQuery;
          reply.header('Warning', QUERY_TOKEN_WARNING);
        }
      }
      if (!token) {
        request.authError = new AppError('UNAUTHORIZED', 'Missing API token: send it in the x-api-key header (or the token query parameter)');
        return;
      }
      try {
        request.auth = await tokens.authenticate(token);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        request.authError = error;
      }
    },
    limit,
  );
}
