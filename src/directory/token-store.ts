/**
 * Every statement on api_tokens. Only the SHA-256 of a token value is stored (token_hash), never
 * the value. A token row is never deleted: revocation sets revoked_at once and for good.
 */
import type { Queryable, Database } from '../platform/database.js';

/** A token as the API shows it (no hash). */
export interface TokenRow {
  id: string;
  accountId: string;
  name: string;
  prefix: string;
  last4: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** What authenticating a request needs, read by hash. */
export interface AuthenticateRow {
  id: string;
  account_id: string;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const TOKEN_COLUMNS = `id, account_id AS "accountId", name, prefix, last4, scopes, created_at AS "createdAt", last_used_at AS "lastUsedAt",
  expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

export async function insertToken(
  db: Queryable,
  row: { id: string; accountId: string; name: string; tokenHash: string; prefix: string; last4: string; scopes: string[]; expiresAt: Date | null },
): Promise<TokenRow> {
  const [inserted] = await db.query<TokenRow>(
    `INSERT INTO api_tokens (id, account_id, name, token_hash, prefix, last4, scopes, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::text[], $8) RETURNING ${TOKEN_COLUMNS}`,
    [row.id, row.accountId, row.name, row.tokenHash, row.prefix, row.last4, row.scopes, row.expiresAt],
  );
  return inserted!;
}

/** A page of the account's tokens, newest first, with the account's total. */
export async function listTokens(db: Queryable, accountId: string, limit: number, offset: number): Promise<{ rows: TokenRow[]; total: number }> {
  const [rows, [counted]] = await Promise.all([
    db.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, [
      accountId,
      limit,
      offset,
    ]),
    db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_tokens WHERE account_id = $1', [accountId]),
  ]);
  return { rows, total: counted?.n ?? 0 };
}

/** The token, of any account when `accountId` is undefined (the operator's CLI). */
export async function findToken(db: Queryable, tokenId: string, accountId?: string): Promise<TokenRow | undefined> {
  const [row] =
    accountId === undefined
      ? await db.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE id = $1`, [tokenId])
      : await db.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE id = $1 AND account_id = $2`, [tokenId, accountId]);
  return row;
}

/** Revokes the token now; undefined when it was revoked already (or is not the account's). */
export async function revokeToken(db: Queryable, accountId: string, tokenId: string): Promise<TokenRow | undefined> {
  const [row] = await db.query<TokenRow>(
    `UPDATE api_tokens SET revoked_at = $3 WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL RETURNING ${TOKEN_COLUMNS}`,
    [tokenId, accountId, new Date()],
  );
  return row;
}

/** Tells every process (LISTEN waygate_tokens) to drop the token from its cache; the CLI has no bus, so it goes through the database. */
export async function announceRevocation(db: Queryable, tokenId: string): Promise<void> {
  await db.query(`SELECT pg_notify('waygate_tokens', $1)`, [tokenId]);
}

/** On every request, so a raw prepared statement: no query building, no re-planning. */
export async function findTokenByHash(database: Database, hash: string): Promise<AuthenticateRow | undefined> {
  const [row] = await database.queryPrepared<AuthenticateRow>({
    name: 'tokens_authenticate',
    text: 'SELECT id, account_id, scopes, expires_at, revoked_at, last_used_at FROM api_tokens WHERE token_hash = $1',
    values: [hash],
  });
  return row;
}

/** Sets last_used_at to `now` unless another request already set it at or after `staleBefore`. */
export async function touchToken(db: Queryable, tokenId: string, now: Date, staleBefore: Date): Promise<void> {
  await db.query('UPDATE api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)', [tokenId, now, staleBefore]);
}
