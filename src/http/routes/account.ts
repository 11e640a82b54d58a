import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AccountService } from '../../directory/accounts.js';
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
  }),
  period: Type.Object({ start: Timestamp, end: Timestamp }, { description: 'The current quota period, anchored on the day the plan started' }),
  usage: Type.Object({ messages: Type.Integer({ description: 'Messages counted in this period' }), contacts: Type.Integer() }),
  limits: Type.Object({ messages: NullableInt, devices: NullableInt, activeWebhooks: NullableInt }),
}, { title: 'Account' });

export const accountRoutes: FastifyPluginAsyncTypebox<{ accounts: AccountService }> = async (app, { accounts }) => {
  app.get(
    '/account',
    {
      config: { scope: 'account:read' },
      schema: { tags: ['account'], operationId: 'getAccount', summary: 'Read the account', description: 'The account: plan, current period, usage and limits.', response: { 200: successData(AccountSchema), ...errorResponses('FORBIDDEN') } },
    },
    async (request) => ({ success: true as const, data: await accounts.getSummary(auth(request).accountId) }),
  );
};
