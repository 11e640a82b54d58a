/**
 * Drizzle schema: the single description of the tables. SQL migrations under drizzle/ are
 * generated from it (`npm run db:generate`); hand-written parts (extensions, trigram indexes,
 * counter triggers) live in their own custom migrations.
 */
import { sql } from 'drizzle-orm';
import { index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });

export const plans = pgTable('plans', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Messages per period; null means unlimited. */
  messageQuota: integer('message_quota'),
  period: text('period', { enum: ['month', 'year'] }).notNull(),
  /** Linked devices; null means unlimited. */
  maxDevices: integer('max_devices'),
  /** Active webhook endpoints; null means unlimited. */
  maxWebhooks: integer('max_webhooks'),
});

export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  planId: text('plan_id')
    .notNull()
    .references(() => plans.id),
  /** Quota periods are anchored on this instant. */
  planStartedAt: ts('plan_started_at').notNull().defaultNow(),
  /** Kept exact by triggers on contacts; read instead of count(*) for unfiltered listings. */
  contactsCount: integer('contacts_count').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** Stored lower-cased. */
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('users_email_key').on(t.email), index('users_account_idx').on(t.accountId)],
);

export const apiTokens = pgTable(
  'api_tokens',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** SHA-256 of the token value, hex. The value itself is never stored. */
    tokenHash: text('token_hash').notNull(),
    prefix: text('prefix').notNull(),
    last4: text('last4').notNull(),
    scopes: text('scopes').array().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
    expiresAt: ts('expires_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [uniqueIndex('api_tokens_hash_key').on(t.tokenHash), index('api_tokens_account_idx').on(t.accountId, t.createdAt)],
);

export const usagePeriods = pgTable(
  'usage_periods',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    periodStart: ts('period_start').notNull(),
    messagesUsed: integer('messages_used').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.periodStart] })],
);

export const contacts = pgTable(
  'contacts',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** E.164 digits without '+'. */
    phoneNumber: text('phone_number').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('contacts_account_phone_key').on(t.accountId, t.phoneNumber),
    index('contacts_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
  ],
);

export const groups = pgTable(
  'groups',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Kept exact by triggers on group_members. */
    contactsCount: integer('contacts_count').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('groups_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc())],
);

export const groupMembers = pgTable(
  'group_members',
  {
    groupId: text('group_id')
      .notNull()
      .references(() => groups.id, { onDelete: 'cascade' }),
    contactId: text('contact_id')
      .notNull()
      .references(() => contacts.id, { onDelete: 'cascade' }),
    addedAt: ts('added_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.contactId] }), index('group_members_contact_idx').on(t.contactId)],
);

export const schema = { plans, accounts, users, apiTokens, usagePeriods, contacts, groups, groupMembers };
export type Schema = typeof schema;

export const nowSql = sql`now()`;
