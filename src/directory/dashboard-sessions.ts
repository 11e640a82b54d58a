/**
 * Dashboard users' sessions: sign-up, log-in (throttled per (email, client address) and per
 * address, counted in the database so every node sees them; see admitAttempt), log-out, and the lookup of a
 * session from its cookie value. The cookie carries 32 random bytes; only their SHA-256 is
 * stored. Each session has its own CSRF token (synchronizer token), which state-changing
 * dashboard requests must echo in a header. With SESSION_SECRET set, the stored hash is an
 * HMAC keyed by it, so changing the secret signs every user out. On a server that listens beyond
 * loopback, the first sign-up of a fresh install must give the setup code the server printed in
 * its log, so a stranger who finds the address first cannot claim it.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database } from '../platform/database.js';
import { AppError } from '../platform/errors.js';
import { normalizeEmail, type AccountService } from './accounts.js';
import { findUserByEmail } from './account-store.js';
import * as store from './session-store.js';
import { hashPassword, verifyPassword } from './passwords.js';

export interface DashboardSession {
  userId: string;
  accountId: string;
  email: string;
  csrfToken: string;
  expiresAt: Date;
}

export interface NewSession {
  /** The cookie value: shown to the browser once, stored only as a hash. */
  cookieValue: string;
  session: DashboardSession;
}

export type SignupPolicy = 'first-user' | 'open';

export interface SessionLimits {
  /** How long a session lasts from log-in. */
  sessionTtlMs: number;
  /** A throttle row is forgotten this long after its last attempt (the count starts again). */
  failureWindowMs: number;
  /** Attempts per (email, address) in the window before each further one must wait. */
  maxFailuresPerEmail: number;
  /** Attempts per address (any email) in the window before each further one must wait. */
  maxFailuresPerIp: number;
  /** The first wait once the free attempts are spent; each further admitted attempt doubles it. */
  firstDelayMs: number;
  /** The longest wait between two attempts. */
  maxDelayMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  sessionTtlMs: 14 * 24 * 3_600_000,
  failureWindowMs: 15 * 60_000,
  maxFailuresPerEmail: 5,
  maxFailuresPerIp: 30,
  firstDelayMs: 2_000,
  maxDelayMs: 5 * 60_000,
};

/** Compared with this when the email is unknown, so a wrong email costs as long as a wrong password. */
let decoyHash: Promise<string> | undefined;

export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export class DashboardSessionService {
  constructor(
    private readonly database: Database,
    private readonly accounts: AccountService,
    private readonly signupPolicy: SignupPolicy,
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
    private readonly secret: string | undefined = undefined,
    /** The first sign-up must give the install's setup code (AccountService.setupCode). */
    private readonly requireSetupCode: boolean = false,
  ) {}

  /** Whether a sign-up now must give the setup code: a fresh install that does not listen on loopback only. */
  async setupCodeRequired(): Promise<boolean> {
    return this.requireSetupCode && !(await this.accounts.hasUsers());
  }

  private hashSessionId(value: string): string {
    return (this.secret ? createHmac('sha256', this.secret) : createHash('sha256')).update(value).digest('hex');
  }

  /** Whether a visitor may create an account now. */
  async signupOpen(): Promise<boolean> {
    return this.signupPolicy === 'open' || !(await this.accounts.hasUsers());
  }

  /**
   * The first user of a fresh install gets an account on the `unlimited` plan (they run the
   * installation); with open sign-up, later users each get an account of their own on `free`.
   */
  async signup(input: { email: string; password: string; name?: string | undefined; setupCode?: string | undefined }): Promise<NewSession> {
    const first = !(await this.accounts.hasUsers());
    if (!first && this.signupPolicy !== 'open') {
      throw new AppError('FORBIDDEN', 'Sign-up is closed: this installation already has a user. Ask them to create your account.');
    }
    if (first && this.requireSetupCode && !(await this.accounts.isSetupCode(input.setupCode ?? ''))) {
      throw new AppError(
        'FORBIDDEN',
        input.setupCode
          ? 'The setup code is not right: use the one in the sign-up link the server printed in its log'
          : 'This installation is not claimed yet: the first sign-up needs the setup code the server printed in its log (open the sign-up link from the log)',
        [{ field: 'setupCode', message: input.setupCode ? 'is not the setup code in the server log' : 'is required for the first sign-up' }],
      );
    }
    const created = await this.accounts.createAccount({
      email: input.email,
      password: input.password,
      plan: first ? 'unlimited' : 'free',
      ...(input.name ? { name: input.name } : {}),
      // With the first-user policy, two visitors racing on a fresh install cannot both win.
      onlyIfNoUsers: this.signupPolicy !== 'open',
    });
    return this.open(created.userId, created.accountId, created.email);
  }

  async login(input: { email: string; password: string; ip: string }, now: Date = new Date()): Promise<NewSession> {
    const email = normalizeEmail(input.email);
    await this.admitAttempt(email, input.ip, now);
    const user = await findUserByEmail(this.database, email);
    decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
    const valid = await verifyPassword(input.password, user?.password_hash ?? (await decoyHash));
    // The attempt was counted when it was admitted; a failure needs nothing more.
    if (!user || !valid) throw new AppError('UNAUTHORIZED', 'The email or the password is not right');
    // This email's attempts from this address are forgiven; rows idle past the window are swept.
    await store.forgiveLoginAttempts(this.database, email, input.ip, new Date(now.getTime() - this.limits.failureWindowMs));
    return this.open(user.id, user.account_id, email, now);
  }

  /**
   * Admits and counts one log-in attempt (store.admitLoginAttempt), or refuses it with 429. A
   * refused attempt changes nothing, so a flood cannot lengthen the wait, and it never touches
   * another address's rows: the owner still gets in from elsewhere at once, or from the same
   * address after the current delay.
   */
  private async admitAttempt(email: string, ip: string, now: Date): Promise<void> {
    const { failureWindowMs, maxFailuresPerEmail, maxFailuresPerIp, firstDelayMs, maxDelayMs } = this.limits;
    const since = new Date(now.getTime() - failureWindowMs);
    const policy = { since, maxPerEmail: maxFailuresPerEmail, maxPerIp: maxFailuresPerIp, firstDelayMs, maxDelayMs };
    if (await store.admitLoginAttempt(this.database, email, ip, now, policy)) return;
    const until = await store.nextLoginAllowedAt(this.database, email, ip, since);
    const retryAfter = Math.max(1, Math.ceil(((until?.getTime() ?? now.getTime()) - now.getTime()) / 1000));
    throw new AppError(
      'RATE_LIMITED',
      `Too many log-in attempts: try again in ${retryAfter < 60 ? `${retryAfter} s` : `${Math.ceil(retryAfter / 60)} min`}`,
      { retryAfterSeconds: retryAfter },
      { 'retry-after': String(retryAfter) },
    );
  }

  private async open(userId: string, accountId: string, email: string, now: Date = new Date()): Promise<NewSession> {
    const cookieValue = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + this.limits.sessionTtlMs);
    await store.insertSession(this.database, { idHash: this.hashSessionId(cookieValue), userId, accountId, csrfToken, now, expiresAt });
    // Expired sessions of anyone are swept on log-in, so the table does not grow without bound.
    await store.deleteExpiredSessions(this.database, now);
    return { cookieValue, session: { userId, accountId, email, csrfToken, expiresAt } };
  }

  /** The live session a cookie value names, or null. */
  async find(cookieValue: string, now: Date = new Date()): Promise<DashboardSession | null> {
    const row = await store.findLiveSession(this.database, this.hashSessionId(cookieValue), now);
    if (!row) return null;
    return { userId: row.user_id, accountId: row.account_id, email: row.email, csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }

  async logout(cookieValue: string): Promise<void> {
    await store.deleteSession(this.database, this.hashSessionId(cookieValue));
  }
}
