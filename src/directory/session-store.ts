/**
 * Every statement on dashboard_sessions and dashboard_login_throttle. Sessions are addressed by
 * the hash of their cookie value only (never the value itself). A throttle row counts the log-in
 * attempts of one (email, address) pair; the pair (ANY_EMAIL, address) counts every email tried
 * from the address.
 */
import type { Queryable } from '../platform/database.js';

/** The email of an address's own throttle row (every email tried from it): no trimmed email is a lone space. */
export const ANY_EMAIL = ' ';

export interface SessionRow {
  user_id: string;
  account_id: string;
  email: string;
  csrf_token: string;
  expires_at: Date;
}

export interface ThrottlePolicy {
  /** Attempts before `since` no longer count (the count starts again). */
  since: Date;
  maxPerEmail: number;
  maxPerIp: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

export async function insertSession(
  db: Queryable,
  row: { idHash: string; userId: string; accountId: string; csrfToken: string; now: Date; expiresAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO dashboard_sessions (id_hash, user_id, account_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $5, $6)',
    [row.idHash, row.userId, row.accountId, row.csrfToken, row.now, row.expiresAt],
  );
}

/** Sweeps every user's sessions expired before `now`. */
export async function deleteExpiredSessions(db: Queryable, now: Date): Promise<void> {
  await db.query('DELETE FROM dashboard_sessions WHERE expires_at < $1', [now]);
}

/** The session with this hash, with its user's email, if it is still live at `now`. */
export async function findLiveSession(db: Queryable, idHash: string, now: Date): Promise<SessionRow | undefined> {
  const [row] = await db.query<SessionRow>(
    `SELECT s.user_id, s.account_id, u.email, s.csrf_token, s.expires_at
       FROM dashboard_sessions s JOIN users u ON u.id = s.user_id
      WHERE s.id_hash = $1 AND s.expires_at > $2`,
    [idHash, now],
  );
  return row;
}

export async function deleteSession(db: Queryable, idHash: string): Promise<void> {
  await db.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
}

/**
 * Admits and counts one log-in attempt in a single statement; whether it was admitted. The
 * address's row is counted first and the (email, address) row only if the address's was
 * admitted; each upsert holds its row's lock, so parallel attempts are serialised and at most the
 * free attempts pass at once. Past them, each admitted attempt sets the next allowed moment
 * firstDelayMs · 2^k later (capped at maxDelayMs). A refused attempt changes nothing.
 */
export async function admitLoginAttempt(db: Queryable, email: string, ip: string, now: Date, policy: ThrottlePolicy): Promise<boolean> {
  const upsert = (free: string) => `
    INSERT INTO dashboard_login_throttle AS t (email, ip, attempts, last_attempt_at, next_allowed_at)
    SELECT $EMAIL, $2, 1, $3, $3 ${free === '$6' ? 'WHERE EXISTS (SELECT 1 FROM by_ip)' : ''}
    ON CONFLICT (email, ip) DO UPDATE SET
      attempts = CASE WHEN t.last_attempt_at < $4 THEN 1 ELSE t.attempts + 1 END,
      last_attempt_at = $3,
      next_allowed_at = CASE
        WHEN t.last_attempt_at < $4 OR t.attempts + 1 < ${free} THEN $3
        ELSE $3 + make_interval(secs => least($8::float8, $7::float8 * power(2, t.attempts + 1 - ${free})) / 1000)
      END
    WHERE t.next_allowed_at <= $3 OR t.last_attempt_at < $4
    RETURNING 1`;
  const [admitted] = await db.query<{ ok: number }>(
    `WITH by_ip AS (${upsert('$5').replace('$EMAIL', `'${ANY_EMAIL}'`)})
     ${upsert('$6').replace('$EMAIL', '$1::text')}`,
    [email, ip, now, policy.since, policy.maxPerIp, policy.maxPerEmail, policy.firstDelayMs, policy.maxDelayMs],
  );
  return admitted !== undefined;
}

/** When the next attempt for (email, ip) is allowed, from the rows still counting (since `since`). */
export async function nextLoginAllowedAt(db: Queryable, email: string, ip: string, since: Date): Promise<Date | null> {
  const [row] = await db.query<{ until: Date | null }>(
    'SELECT max(next_allowed_at) AS until FROM dashboard_login_throttle WHERE ip = $1 AND email IN ($2, $3) AND last_attempt_at >= $4',
    [ip, email, ANY_EMAIL, since],
  );
  return row?.until ?? null;
}

/** Forgets the attempts of (email, ip), and sweeps every row idle since before `idleBefore`. */
export async function forgiveLoginAttempts(db: Queryable, email: string, ip: string, idleBefore: Date): Promise<void> {
  await db.query('DELETE FROM dashboard_login_throttle WHERE (email = $1 AND ip = $2) OR last_attempt_at < $3', [email, ip, idleBefore]);
}
