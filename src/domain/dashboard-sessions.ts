/**
 * Dashboard users' sessions: sign-up, log-in (rate limited by failed attempts per email and per
 * address, counted in the database so every node sees them), log-out, and the lookup of a
 * session from its cookie value. The cookie carries 32 random bytes; only their SHA-256 is
 * stored. Each session has its own CSRF token (synchronizer token), which state-changing
 * dashboard requests must echo in a header. With SESSION_SECRET set, the stored hash is an
 * HMAC keyed by it, so changing the secret signs every user out.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import type { AccountService } from './accounts.js';
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
  /** Failed log-ins counted over this window. */
  failureWindowMs: number;
  /** Failed log-ins per email in the window before further attempts are refused. */
  maxFailuresPerEmail: number;
  /** Failed log-ins per client address in the window. */
  maxFailuresPerIp: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  sessionTtlMs: 14 * 24 * 3_600_000,
  failureWindowMs: 15 * 60_000,
  maxFailuresPerEmail: 5,
  maxFailuresPerIp: 30,
};


/** Compared with this when the email is unknown, so a wrong email costs as long as a wrong password. */
let decoyHash: Promise<string> | undefined;

export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

interface SessionRow {
  user_id: string;
  account_id: string;
  email: string;
  csrf_token: string;
  expires_at: Date;
}

export class DashboardSessionService {
  constructor(
    private readonly database: Database,
    private readonly accounts: AccountService,
    private readonly signupPolicy: SignupPolicy,
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
    private readonly secret: string | undefined = undefined,
  ) {}

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
  async signup(input: { email: string; password: string; name?: string | undefined }): Promise<NewSession> {
    const first = !(await this.accounts.hasUsers());
    if (!first && this.signupPolicy !== 'open') {
      throw new AppError('FORBIDDEN', 'Sign-up is closed: this installation already has a user. Ask them to create your account.');
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
    const email = input.email.trim().toLowerCase();
    await this.assertNotThrottled(email, input.ip, now);
    const [user] = await this.database.query<{ id: string; account_id: string; password_hash: string }>(
      'SELECT id, account_id, password_hash FROM users WHERE email = $1',
      [email],
    );
    decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
    const valid = await verifyPassword(input.password, user?.password_hash ?? (await decoyHash));
    if (!user || !valid) {
      await this.database.query('INSERT INTO dashboard_login_failures (email, ip, failed_at) VALUES ($1, $2, $3)', [email, input.ip, now]);
      throw new AppError('UNAUTHORIZED', 'The email or the password is not right');
    }
    // This user's failures are forgiven; everyone's older than the window no longer count.
    await this.database.query('DELETE FROM dashboard_login_failures WHERE email = $1 OR failed_at < $2', [
      email,
      new Date(now.getTime() - this.limits.failureWindowMs),
    ]);
    return this.open(user.id, user.account_id, email, now);
  }

  private async assertNotThrottled(email: string, ip: string, now: Date): Promise<void> {
    const since = new Date(now.getTime() - this.limits.failureWindowMs);
    const [counts] = await this.database.query<{ by_email: number; by_ip: number; oldest: Date | null }>(
      `SELECT count(*) FILTER (WHERE email = $1)::int AS by_email,
              count(*) FILTER (WHERE ip = $2)::int AS by_ip,
              min(failed_at) AS oldest
         FROM dashboard_login_failures
        WHERE (email = $1 OR ip = $2) AND failed_at > $3`,
      [email, ip, since],
    );
    if (!counts) return;
    if (counts.by_email >= this.limits.maxFailuresPerEmail || counts.by_ip >= this.limits.maxFailuresPerIp) {
      const retryAfter = Math.max(1, Math.ceil(((counts.oldest?.getTime() ?? now.getTime()) + this.limits.failureWindowMs - now.getTime()) / 1000));
      throw new AppError(
        'RATE_LIMITED',
        `Too many failed log-ins: try again in ${Math.ceil(retryAfter / 60)} min`,
        { retryAfterSeconds: retryAfter },
        { 'retry-after': String(retryAfter) },
      );
    }
  }

  private async open(userId: string, accountId: string, email: string, now: Date = new Date()): Promise<NewSession> {
    const cookieValue = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + this.limits.sessionTtlMs);
    await this.database.query(
      'INSERT INTO dashboard_sessions (id_hash, user_id, account_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $5, $6)',
      [this.hashSessionId(cookieValue), userId, accountId, csrfToken, now, expiresAt],
    );
    // Expired sessions of anyone are swept on log-in, so the table does not grow without bound.
    await this.database.query('DELETE FROM dashboard_sessions WHERE expires_at < $1', [now]);
    return { cookieValue, session: { userId, accountId, email, csrfToken, expiresAt } };
  }

  /** The live session a cookie value names, or null. */
  async find(cookieValue: string, now: Date = new Date()): Promise<DashboardSession | null> {
    const [row] = await this.database.query<SessionRow>(
      `SELECT s.user_id, s.account_id, u.email, s.csrf_token, s.expires_at
         FROM dashboard_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id_hash = $1 AND s.expires_at > $2`,
      [this.hashSessionId(cookieValue), now],
    );
    if (!row) return null;
    return { userId: row.user_id, accountId: row.account_id, email: row.email, csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }

  async logout(cookieValue: string): Promise<void> {
    await this.database.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [this.hashSessionId(cookieValue)]);
  }
}
