import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AccountService } from '../../directory/accounts.js';
import { OVERVIEW_DAYS, OverviewSchema } from '../../messaging/overview-record.js';
import type { OverviewService } from '../../messaging/overview-service.js';
import { auth } from '../auth.js';
import { errorResponses, successData, Timestamp } from '../schemas.js';

const NullableInt = Type.Union([Type.Integer(), Type.Null()], { description: 'null = unlimited' });

const AccountSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  createdAt: Timestamp,
  plan: Type.Object({
    id: Type.String(),
    name: Type.String(),
    messageQuota: NullableInt,
    period: Type.Union([Type.Literal('month'), Type.Literal('year')]),
    maxDevices: NullableInt,
    maxWebhooks: NullableInt,
    maxUploadBytes: Type.Union([Type.Integer(), Type.Null()], { description: 'Bytes the uploads (POST /media) may hold at once; null = unlimited' }),
  }),
  period: Type.Object({ start: Timestamp, end: Timestamp }, { description: 'The current quota period, anchored on the day the plan started' }),
  usage: Type.Object({
    messages: Type.Integer({ description: 'Messages counted in this period' }),
    contacts: Type.Integer(),
    uploadBytes: Type.Integer({ description: 'Bytes the uploads hold now' }),
  }),
  limits: Type.Object({ messages: NullableInt, devices: NullableInt, activeWebhooks: NullableInt, uploadBytes: NullableInt }),
}, { title: 'Account' });

export const accountRoutes: FastifyPluginAsyncTypebox<{ accounts: AccountService; overview: OverviewService }> = async (app, { accounts, overview }) => {
  app.get(
    '/account',
    {
      config: { scope: 'account:read' },
      schema: { tags: ['account'], operationId: 'getAccount', summary: 'Read the account', description: 'The account: plan, current period, usage and limits.', response: { 200: successData(AccountSchema), ...errorResponses('FORBIDDEN') } },
    },
    async (request) => ({ success: true as const, data: await accounts.getSummary(auth(request).accountId) }),
  );

  app.get(
    '/account/overview',
    {
      config: { scope: 'account:read' },
      schema: {
        tags: ['account'], operationId: 'getAccountOverview', description: 'Messages per UTC day by outcome (sent, delivered, read, failed) and incoming, over 7, 30 or 90 days, with delivery and read rates, failures by error code, the devices with their warm-up and the health of the webhook endpoints; read from daily counts, so it stays fast at any message count.',
        summary: 'Messages per day by outcome, rates, failures by error code, devices and webhook health over the last 7, 30 or 90 UTC days',
        querystring: Type.Object(
          { days: Type.Optional(Type.Integer({ enum: [...OVERVIEW_DAYS], default: 30, description: '7, 30 or 90 (default 30): the days up to and including today (UTC)' })) },
          { additionalProperties: false },
        ),
        response: { 200: successData(OverviewSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => ({ success: true as const, data: await overview.get(auth(request).accountId, request.query.days ?? 30) }),
  );
};
