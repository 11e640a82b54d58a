/** Accounts (tenants), their dashboard users, plans and the usage of the current quota period. */
import type { Database } from '../platform/database.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { hashPassword } from './passwords.js';
import type { Plan } from './plans.js';
import { uploadBytesHeld } from '../media/media-store.js';
import * as store from './account-store.js';

export interface AccountSummary {
  id: string;
  name: string;
  createdAt: Date;
  plan: Plan;
  period: { start: Date; end: Date };
  usage: { messages: number; contacts: number; uploadBytes: number };
  limits: { messages: number | null; devices: number | null; activeWebhooks: number | null; uploadBytes: number | null };
}

export interface CreatedAccount {
  accountId: string;
  userId: string;
  email: string;
  planId: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** 32 letters and digits without the look-alikes 0, 1, l and o: a byte modulo 32 picks one without bias. */
const SETUP_CODE_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/** The one form of an email everywhere (stored, looked up, compared): trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

function validateNewUser(input: { email: string; password: string }): string {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email)) throw new AppError('VALIDATION_ERROR', 'email is not a valid address', [{ field: 'email', message: 'must be an email address' }]);
  if (input.password.length < 8) {
    throw new AppError('VALIDATION_ERROR', 'password must have at least 8 characters', [
      { field: 'password', message: 'must have at least 8 characters' },
    ]);
  }
  return email;
}

export class AccountService {
  constructor(private readonly database: Database) {}

  async listPlans(): Promise<Plan[]> {
    return store.listPlans(this.database);
  }

  private async requirePlan(planId: string): Promise<void> {
    if (await store.planExists(this.database, planId)) return;
    const known = (await this.listPlans()).map((p) => p.id).join(', ');
    throw new AppError('VALIDATION_ERROR', `Unknown plan "${planId}" (plans: ${known})`, [{ field: 'plan', message: `must be one of ${known}` }]);
  }

  /**
   * Creates an account with its first dashboard user. With `onlyIfNoUsers`, it is created only
   * when no user exists at all (a fresh install's sign-up): concurrent attempts are serialised by
   * an advisory lock, so exactly one can win.
   */
  async createAccount(input: { email: string; password: string; plan?: string; name?: string; onlyIfNoUsers?: boolean }): Promise<CreatedAccount> {
    const email = validateNewUser(input);
    const planId = input.plan ?? 'free';
    await this.requirePlan(planId);
    const row = { accountId: newId('acc'), name: input.name ?? email, planId, userId: newId('usr'), email, passwordHash: await hashPassword(input.password) };
    try {
      await this.database.transaction(async (tx) => {
        if (input.onlyIfNoUsers) {
          await store.lockFirstUserSignup(tx);
          if (await store.anyUser(tx)) throw new AppError('FORBIDDEN', 'Sign-up is closed: this installation already has a user. Ask them to create your account.');
        }
        await store.insertAccountWithUser(tx, row);
        await store.deleteSetupCode(tx);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('CONFLICT', `A user with email ${email} already exists`);
      throw error;
    }
    return { accountId: row.accountId, userId: row.userId, email, planId };
  }

  async hasUsers(): Promise<boolean> {
    return store.anyUser(this.database);
  }

  /**
   * The setup code that claims a fresh install (the first dashboard sign-up must give it where
   * the server listens beyond loopback): made on first need, the same for every process, gone
   * once an account exists. 100 random bits, as five groups of four characters.
   */
  async setupCode(): Promise<string> {
    const bytes = randomBytes(20);
    const candidate = Array.from(bytes, (byte) => SETUP_CODE_ALPHABET[byte % 32]).join('').replace(/(.{4})(?!$)/g, '$1-');
    return store.ensureSetupCode(this.database, candidate);
  }

  /** Whether `given` is the setup code (case, spaces and dashes aside). */
  async isSetupCode(given: string): Promise<boolean> {
    // Digests of equal length, compared in constant time.
    const digest = (code: string): Buffer => createHash('sha256').update(code.toLowerCase().replace(/[^a-z0-9]/g, '')).digest();
    return timingSafeEqual(digest(given), digest(await this.setupCode()));
  }

  async findAccountIdByEmail(email: string): Promise<string | undefined> {
    return (await store.findUserByEmail(this.database, normalizeEmail(email)))?.account_id;
  }

  /** Moves the account to another plan; the new plan's periods are anchored on now. */
  async setPlan(accountId: string, planId: string): Promise<void> {
    await this.requirePlan(planId);
    if (!(await store.setAccountPlan(this.database, accountId, planId, new Date()))) throw new AppError('NOT_FOUND', 'Account not found');
  }

  async getSummary(accountId: string, now: Date = new Date()): Promise<AccountSummary> {
    const account = await store.findAccountWithPlan(this.database, accountId);
    if (!account) throw new AppError('NOT_FOUND', 'Account not found');
    const { plan } = account;
    const { start, end, used } = await store.periodUsage(this.database, accountId, account.planStartedAt, plan.period, now);
    const uploadBytes = await uploadBytesHeld(this.database, accountId);
    return {
      id: account.id,
      name: account.name,
      createdAt: account.createdAt,
      plan,
      period: { start, end },
      usage: { messages: used, contacts: account.contactsCount, uploadBytes },
      limits: { messages: plan.messageQuota, devices: plan.maxDevices, activeWebhooks: plan.maxWebhooks, uploadBytes: plan.maxUploadBytes },
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
