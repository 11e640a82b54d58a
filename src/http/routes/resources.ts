/**
 * Every resource route of the public API, registered into a scope that has already settled who
 * the caller is: the API's scope (token auth) and the dashboard's (session auth) mount the same
 * routes, so both share one implementation of every rule.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../app.js';
import type { Database } from '../../platform/database.js';
import { accountRoutes } from './account.js';
import { chatRoutes } from './chats.js';
import { contactRoutes } from './contacts.js';
import { deviceRoutes } from './devices.js';
import { eventRoutes } from './events.js';
import { groupRoutes } from './groups.js';
import { mediaRoutes } from './media.js';
import { messageRoutes } from './messages.js';
import { sandboxRoutes } from './sandbox.js';
import { tokenRoutes } from './tokens.js';
import { webhookRoutes } from './webhooks.js';

export async function registerResourceRoutes(scope: FastifyInstance, services: Services, database: Database): Promise<void> {
  await scope.register(accountRoutes, { accounts: services.accounts, overview: services.overview });
  await scope.register(tokenRoutes, { tokens: services.tokens });
  await scope.register(contactRoutes, { contacts: services.contacts });
  await scope.register(groupRoutes, { groups: services.groups });
  await scope.register(deviceRoutes, { devices: services.devices });
  await scope.register(messageRoutes, { messages: services.messages, bulkJobs: services.bulkJobs, idempotency: services.idempotency });
  await scope.register(mediaRoutes, { database, uploads: services.uploads });
  await scope.register(webhookRoutes, { webhooks: services.webhooks });
  await scope.register(eventRoutes, { events: services.events });
  await scope.register(chatRoutes, { conversations: services.conversations });
  if (services.sandbox) await scope.register(sandboxRoutes, { world: services.sandbox, database });
}
