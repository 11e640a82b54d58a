/** Accounts (tenants), their dashboard users, plans and the usage of the current quota period. */
import { eq, sql } from 'drizzle-orm';
import type { Database } from '../platform/database.js';
import { accounts, plans, users } from '../platform/schema.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { hashPassword } from './passwords.js';
import type { Plan, PlanPeriod } from './plans.js';

export interface AccountSummary {
  id: string;
  name: string;
  createdAt: Date;
  plan: Plan;
  period: { start: Date; end: Date };
  usage: { messages: number; contacts: number };
  limits: { messages: number | null; devices: number | null; activeWebhooks: number | null };
}

export interface CreatedAccount {
  accountId: string;
  userId: string;
  email: string;
  planId: string;
}

/** An arbitrary constant: "wgfirstu" (first-user sign-up). */
const FIRST_USER_LOCK_KEY = 0x77676675;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export class AccountService {
  constructor(private readonly database: Database) {}

  async listPlans(): Promise<Plan[]> {
    const rows = await this.database.db.select().from(plans).orderBy(plans.id);
    return rows.map((row) => ({ ...row, period: row.period as PlanPeriod }));
  }

  private async requirePlan(planId: string): Promise<void> {
    const [plan] = await this.database.db.select({ id: plans.id }).from(plans).where(eq(plans.id, planId));
    if (!plan) {
      const known = (await this.listPlans()).map((p) => p.id).join(', ');
      throw new AppError('VALIDATION_ERROR', `Unknown plan "${planId}" (plans: ${known})`, [
        { field: 'plan', message: `must be one of ${known}` },
      ]);
    }
  }

  /**
   * Creates an account with its first dashboard user. With `onlyIfNoUsers`, it is created only
   * when no user exists at all (a fresh install's sign-up): concurrent attempts are serialised by
   * an advisory lock, so exactly one can win.
   */
  async createAccount(input: { email: string; password: string; plan?: string; name?: string; onlyIfNoUsers?: boolean }): Promise<CreatedAccount> {
    const email = input.email.trim().toLowerCase();
    if (!EMAIL.test(email)) throw new AppError('VALIDATION_ERROR', 'email is not a valid address', [{ field: 'email', message: 'must be an email address' }]);
    if (input.password.length < 8) {
      throw new AppError('VALIDATION_ERROR', 'password must have at least 8 characters', [
        { field: 'password', message: 'must have at least 8 characters' },
      ]);
    }
    const planId = input.plan ?? 'free';
    await this.requirePlan(planId);
    const passwordHash = await hashPassword(input.password);
    const accountId = newId('acc');
    const userId = newId('usr');
    try {
      await this.database.db.transaction(async (tx) => {
        if (input.onlyIfNoUsers) {
          await tx.execute(sql`SELECT pg_advisory_xact_lock(${FIRST_USER_LOCK_KEY})`);
          const [existing] = await tx.select({ id: users.id }).from(users).limit(1);
          if (existing) throw new AppError('FORBIDDEN', 'Sign-up is closed: this installation already has a user. Ask them to create your account.');
        }
        await tx.insert(accounts).values({ id: accountId, name: input.name ?? email, planId });
        await tx.insert(users).values({ id: userId, accountId, email, passwordHash });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('CONFLICT', `A user with email ${email} already exists`);
      throw error;
    }
    return { accountId, userId, email, planId };
  }

  async hasUsers(): Promise<boolean> {
    const [row] = await this.database.db.select({ id: users.id }).from(users).limit(1);
    return row !== undefined;
  }

  async findAccountIdByEmail(email: string): Promise<string | undefined> {
    const [row] = await this.database.db
      .select({ accountId: users.accountId })
      .from(users)
      .where(eq(users.email, email.trim().toLowerCase()));
    return row?.accountId;
  }

  /** Moves the account to another plan; the new plan's periods are anchored on now. */
  async setPlan(accountId: string, planId: string): Promise<void> {
    await this.requirePlan(planId);
    const updated = await this.database.db
      .update(accounts)
      .set({ planId, planStartedAt: new Date() })
      .where(eq(accounts.id, accountId))
      .returning({ id: accounts.id });
    if (updated.length === 0) throw new AppError('NOT_FOUND', 'Account not found');
  }

  async getSummary(accountId: string, now: Date = new Date()): Promise<AccountSummary> {
    const [row] = await this.database.db
      .select({ account: accounts, plan: plans })
      .from(accounts)
      .innerJoin(plans, eq(plans.id, accounts.planId))
      .where(eq(accounts.id, accountId));
    if (!row) throw new AppError('NOT_FOUND', 'Account not found');
    const plan: Plan = { ...row.plan, period: row.plan.period as PlanPeriod };
    const [usage] = await this.database.query<{ period_start: Date; period_end: Date; used: number | null }>(
      `SELECT p.period_start, p.period_end,
              (SELECT COALESCE(sum(messages_used), 0)::int FROM usage_periods u WHERE u.account_id = $1 AND u.period_start = p.period_start) AS used
         FROM waygate_period($2, $3, $4) AS p`,
      [accountId, row.account.planStartedAt, plan.period, now],
    );
    const period = { start: usage!.period_start, end: usage!.period_end };
    return {
      id: row.account.id,
      name: row.account.name,
      createdAt: row.account.createdAt,
      plan,
      period,
      usage: { messages: usage?.used ?? 0, contacts: row.account.contactsCount },
      limits: { messages: plan.messageQuota, devices: plan.maxDevices, activeWebhooks: plan.maxWebhooks },
    };
  }
}

export function isUniqueViolation(error: unknown): boolean {
  let current: unknown = error;
  // Drizzle wraps driver errors; the Postgres code sits on the error or its cause.
  for (let depth = 0; depth < 3 && current; depth++) {
    if ((current as { code?: string }).code === '23505') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
