/**
 * Authentication of the public API: `x-api-key: <token>` or `?token=<token>`. Registered only
 * inside the authenticated scope, so public routes (health, docs) never pass through it.
 * The required scope of a route is declared in its `config.scope`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TokenService, AuthContext, TokenScope } from '../domain/tokens.js';
import { AppError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
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

export function installAuth(app: FastifyInstance, tokens: TokenService): void {
  app.addHook('onRequest', async (request, reply) => {
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
      throw new AppError('UNAUTHORIZED', 'Missing API token: send it in the x-api-key header (or the token query parameter)');
    }
    request.auth = await tokens.authenticate(token);
    const scope = request.routeOptions.config.scope;
    if (scope && !request.auth.scopes.has(scope)) {
      throw new AppError('FORBIDDEN', `This token does not have the ${scope} scope`, { requiredScope: scope });
    }
  });
}
