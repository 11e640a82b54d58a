import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TOKEN_SCOPES, type TokenService } from '../../directory/tokens.js';
import { TOKEN_NAME_MAX } from '../../platform/text-limits.js';
import { auth } from '../auth.js';
import { BoundedPageQuery } from './contacts.js';
import { errorResponses, IdParams, NullableTimestamp, successData, successPage, Timestamp, type RouteApp } from '../schemas.js';

const TokenSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'First characters of the value, for recognising it' }),
  last4: Type.String({ description: 'Last four characters of the value' }),
  scopes: Type.Array(Type.String()),
  createdAt: Timestamp,
  lastUsedAt: Type.Union([Timestamp, Type.Null()], { description: 'Precise to one minute' }),
  expiresAt: NullableTimestamp,
  revokedAt: NullableTimestamp,
}, { title: 'Token' });

const CreatedTokenSchema = Type.Object({
  ...TokenSchema.properties,
  token: Type.String({ description: 'The token value. Shown only in this response; store it now.' }),
}, { title: 'TokenWithValue' });

export const tokenRoutes: FastifyPluginAsyncTypebox<{ tokens: TokenService }> = async (app, { tokens }) => {
  collectionRoutes(app, tokens);
  revokeRoutes(app, tokens);
};

/** Listing tokens and creating one (shown once). */
function collectionRoutes(app: RouteApp, tokens: TokenService): void {
  app.get(
    '/tokens',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags: ['tokens'],
        operationId: 'listTokens',
        summary: 'List API tokens',
        description: 'List API tokens, newest first (values are never shown again).',
        querystring: Type.Object(BoundedPageQuery, { additionalProperties: false }),
        response: { 200: successPage(TokenSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50 } = request.query;
      return { success: true as const, ...(await tokens.list(auth(request).accountId, { page, limit })) };
    },
  );

  app.post(
    '/tokens',
    {
      config: { scope: 'tokens:write' },
      schema: {
        tags: ['tokens'],
        operationId: 'createToken',
        summary: 'Create an API token',
        description: 'Create an API token; its value is returned once, in this response.',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: TOKEN_NAME_MAX }),
            scopes: Type.Optional(Type.Array(Type.String({ enum: [...TOKEN_SCOPES] }), { minItems: 1, uniqueItems: true, description: 'Default: every scope' })),
            expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
          },
          { additionalProperties: false },
        ),
        response: { 201: successData(CreatedTokenSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request, reply) => {
      const context = auth(request);
      const expiresAt = request.body.expiresAt ? new Date(request.body.expiresAt) : undefined;
      const { token, record } = await tokens.create(context.accountId, { name: request.body.name, scopes: request.body.scopes, expiresAt }, new Date(), context.scopes);
      return reply.status(201).send({ success: true as const, data: { ...record, token } });
    },
  );
}

/** Revoking a token. */
function revokeRoutes(app: RouteApp, tokens: TokenService): void {
  app.delete(
    '/tokens/:id',
    {
      config: { scope: 'tokens:write' },
      schema: {
        tags: ['tokens'],
        operationId: 'revokeToken',
        summary: 'Revoke an API token',
        description: 'Revoke an API token (effective on the next request); only a token whose scopes this token has.',
        params: IdParams,
        response: { 200: successData(TokenSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => {
      const context = auth(request);
      return { success: true as const, data: await tokens.revoke(context.accountId, request.params.id, context.scopes) };
    },
  );
}
