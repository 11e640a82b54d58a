/**
 * Every statement on accounts, users and plans, one named function per operation. Two columns of
 * accounts have other homes: event_seq belongs to the outbox (events/event-store.ts), and
 * contacts_count is kept by triggers on contacts. Emails are stored lower-cased; callers pass them
 * so.
 */
import { USED_IN_PERIOD_SQL } from '../messaging/quota-store.js';
import type { Queryable } from '../platform/database.js';
import type { Plan } from './plans.js';

/** The one projection of a plan row (`p`) onto the Plan shape; every statement reading a plan selects it. */
const PLAN_COLUMNS = 'p.id, p.name, p.message_quota AS "messageQuota", p.period, p.max_devices AS "maxDevices", p.max_webhooks AS "maxWebhooks", p.max_upload_bytes::float8 AS "maxUploadBytes"';
/** The plan of account $1. */
const ACCOUNT_PLAN_SQL = `SELECT ${PLAN_COLUMNS} FROM accounts a JOIN plans p ON p.id = a.plan_id WHERE a.id = $1`;

/** An arbitrary constant: "wgfirstu" (first-user sign-up). */
const FIRST_USER_LOCK_KEY = 0x77676675;

export interface AccountWithPlan {
  id: string;
  name: string;
  createdAt: Date;
  planStartedAt: Date;
  contactsCount: number;
  plan: Plan;
}

export async function listPlans(db: Queryable): Promise<Plan[]> {
  return db.query<Plan>(`SELECT ${PLAN_COLUMNS} FROM plans p ORDER BY p.id`);
}

export async function planExists(db: Queryable, planId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM plans WHERE id = $1', [planId]);
  return rows.length > 0;
}

/** How many accounts exist. */
export async function countAccounts(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM accounts');
  return row?.n ?? 0;
}

export async function anyUser(db: Queryable): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM users LIMIT 1');
  return rows.length > 0;
}

/** Serialises first-user sign-ups until the transaction ends, so at most one finds no user and wins. */
export async function lockFirstUserSignup(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [FIRST_USER_LOCK_KEY]);
}

/** The setup code of a fresh install: the stored one, or `candidate` stored now when there is none. */
export async function ensureSetupCode(db: Queryable, candidate: string): Promise<string> {
  const [row] = await db.query<{ code: string }>(
    `WITH inserted AS (INSERT INTO setup_codes (code) VALUES ($1) ON CONFLICT (id) DO NOTHING RETURNING code)
     SELECT code FROM inserted UNION ALL SELECT code FROM setup_codes LIMIT 1`,
    [candidate],
  );
  return row!.code;
}

/** Forgets the setup code: an account exists, so the installation is claimed. */
export async function deleteSetupCode(tx: Queryable): Promise<void> {
  await tx.query('DELETE FROM setup_codes');
}

/** Inserts an account and its first user; a taken email fails with a unique violation. */
export async function insertAccountWithUser(
  tx: Queryable,
  row: { accountId: string; name: string; planId: string; userId: string; email: string; passwordHash: string },
): Promise<void> {
  await tx.query('INSERT INTO accounts (id, name, plan_id) VALUES ($1, $2, $3)', [row.accountId, row.name, row.planId]);
  await tx.query('INSERT INTO users (id, account_id, email, password_hash) VALUES ($1, $2, $3, $4)', [row.userId, row.accountId, row.email, row.passwordHash]);
}

export async function findUserByEmail(db: Queryable, email: string): Promise<{ id: string; account_id: string; password_hash: string } | undefined> {
  const [row] = await db.query<{ id: string; account_id: string; password_hash: string }>('SELECT id, account_id, password_hash FROM users WHERE email = $1', [
    email,
  ]);
  return row;
}

/** Moves the account to a plan whose periods are anchored on `startedAt`; whether the account exists. */
export async function setAccountPlan(db: Queryable, accountId: string, planId: string, startedAt: Date): Promise<boolean> {
  const rows = await db.query('UPDATE accounts SET plan_id = $2, plan_started_at = $3 WHERE id = $1 RETURNING id', [accountId, planId, startedAt]);
  return rows.length > 0;
}

export async function findAccountWithPlan(db: Queryable, accountId: string): Promise<AccountWithPlan | undefined> {
  const [row] = await db.query<Omit<AccountWithPlan, 'plan'> & { plan: Plan }>(
    `SELECT a.id, a.name, a.created_at AS "createdAt", a.plan_started_at AS "planStartedAt", a.contacts_count AS "contactsCount",
            (SELECT to_json(plan) FROM (SELECT ${PLAN_COLUMNS}) plan) AS plan
       FROM accounts a JOIN plans p ON p.id = a.plan_id WHERE a.id = $1`,
    [accountId],
  );
  return row;
}

/**
 * The quota period holding `at` for a plan anchored on `anchor` (waygate_period, the one
 * definition), with the messages counted in it (USED_IN_PERIOD_SQL of the quota store).
 */
export async function periodUsage(db: Queryable, accountId: string, anchor: Date, period: string, at: Date): Promise<{ start: Date; end: Date; used: number }> {
  const [row] = await db.query<{ period_start: Date; period_end: Date; used: number | null }>(
    `SELECT p.period_start, p.period_end,
            ${USED_IN_PERIOD_SQL('$1', 'p.period_start')} AS used
       FROM waygate_period($2, $3, $4) AS p`,
    [accountId, anchor, period, at],
  );
  return { start: row!.period_start, end: row!.period_end, used: row!.used ?? 0 };
}

/** The account's plan, unlocked (a first look; a change counted against its limits takes lockAccountPlan). */
export async function accountPlan(db: Queryable, accountId: string): Promise<Plan | undefined> {
  const [row] = await db.query<Plan>(ACCOUNT_PLAN_SQL, [accountId]);
  return row;
}

/**
 * Locks the account row until the transaction ends and reads its plan's limits; undefined when
 * there is no such account. Changes counted against a plan limit take this lock first, so
 * concurrent ones queue and each sees the count the previous one left.
 */
export async function lockAccountPlan(tx: Queryable, accountId: string): Promise<Plan | undefined> {
  const [row] = await tx.query<Plan>(`${ACCOUNT_PLAN_SQL} FOR UPDATE OF a`, [accountId]);
  return row;
}
