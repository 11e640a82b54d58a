/**
 * API tokens: `wg_` + 32 random bytes in base62. Only the SHA-256 of the value is stored, with a
 * display prefix and the last four characters. Every request looks its token up by hash, so a
 * revocation or an expiry takes effect on the very next request on every node.
 */
import { hash, randomBytes } from 'node:crypto';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { MAX_PAGE_SIZE, type Page } from './contacts.js';
import * as store from './token-store.js';
import type { AuthenticateRow, TokenRow } from './token-store.js';

export const TOKEN_SCOPES = [
  'account:read',
  'contacts:read',
  'contacts:write',
  'groups:read',
  'groups:write',
  'messages:read',
  'messages:send',
  'devices:read',
  'devices:write',
  'webhooks:read',
  'webhooks:write',
  'events:read',
  'tokens:read',
  'tokens:write',
] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** lastUsedAt is written at most once per this interval per token, to keep reads cheap. */
const LAST_USED_PRECISION_MS = 60_000;
/**
 * How long a process trusts what it read about a token without reading it again. A revocation
 * reaches every process at once (NOTIFY waygate_tokens, sent by whoever revokes, the CLI too)
 * and this process's own cache synchronously; the TTL only bounds how long a process could
 * miss one if its listening connection dropped at that very moment.
 */
const AUTH_CACHE_MS = 2_000;
const AUTH_CACHE_MAX = 10_000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A token as the API shows it: its row without the account. */
export type TokenRecord = Omit<TokenRow, 'accountId'>;

export interface AuthContext {
  accountId: string;
  tokenId: string;
  scopes: ReadonlySet<string>;
}

/**
 * The rule for minting and revoking: a credential may only act on a token whose every scope it
 * holds itself, so no token can create a stronger one or take away a stronger one's access.
 */
export function assertScopesHeld(scopes: readonly string[], held: ReadonlySet<string>, action: 'grant' | 'revoke'): void {
  const beyond = scopes.filter((scope) => !held.has(scope));
  if (beyond.length === 0) return;
  throw new AppError(
    'FORBIDDEN',
    action === 'grant'
      ? `This token cannot grant scopes it does not have: ${beyond.join(', ')}`
      : `This token cannot revoke a token with scopes it does not have: ${beyond.join(', ')}`,
    { missingScopes: beyond },
  );
}

function base62(bytes: Buffer): string {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (value > 0n) {
    out = BASE62[Number(value % 62n)]! + out;
    value /= 62n;
  }
  // 32 bytes always need 43 base62 digits; pad so every token has the same length.
  return out.padStart(43, '0');
}

export function hashToken(value: string): string {
  return hash('sha256', value, 'hex');
}

const toRecord = (row: TokenRow): TokenRecord => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  last4: row.last4,
  scopes: row.scopes,
  createdAt: row.createdAt,
  lastUsedAt: row.lastUsedAt,
  expiresAt: row.expiresAt,
  revokedAt: row.revokedAt,
});

/** The requested scopes, de-duplicated; all of them when absent. Unknown or none is a 400. */
function validateScopes(requested: string[] | undefined): string[] {
  const scopes = [...new Set(requested ?? TOKEN_SCOPES)];
  const unknown = scopes.filter((scope) => !(TOKEN_SCOPES as readonly string[]).includes(scope));
  if (unknown.length > 0 || scopes.length === 0) {
    throw new AppError('VALIDATION_ERROR', `Unknown or empty scopes: ${unknown.join(', ') || '(none given)'}`, [
      { field: 'scopes', message: `each scope must be one of ${TOKEN_SCOPES.join(', ')}` },
    ]);
  }
  return scopes;
}

export class TokenService {
  /** Token hash → what authenticate read, until when it may be reused. Saves a query per request. */
  private readonly cache = new Map<string, { row: AuthenticateRow; until: number }>();

  constructor(
    private readonly database: Database,
    bus?: Bus,
  ) {
    bus?.subscribe('waygate_tokens', (tokenId) => this.forget(tokenId));
  }

  private forget(tokenId: string): void {
    for (const [hash, entry] of this.cache) if (entry.row.id === tokenId) this.cache.delete(hash);
  }

  /** `actingScopes`: the scopes of the credential asking (absent for the operator's CLI). */
  async create(
    accountId: string,
    input: { name: string; scopes?: string[] | undefined; expiresAt?: Date | undefined },
    now: Date = new Date(),
    actingScopes?: ReadonlySet<string>,
  ): Promise<{ token: string; record: TokenRecord }> {
    const name = input.name.trim();
    if (name.length === 0) throw new AppError('VALIDATION_ERROR', 'name must not be empty', [{ field: 'name', message: 'must not be empty' }]);
    const scopes = validateScopes(input.scopes);
    if (actingScopes) assertScopesHeld(scopes, actingScopes, 'grant');
    if (input.expiresAt && input.expiresAt <= now) {
      throw new AppError('VALIDATION_ERROR', 'expiresAt must be in the future', [{ field: 'expiresAt', message: 'must be in the future' }]);
    }
    const token = `wg_${base62(randomBytes(32))}`;
    const row = await store.insertToken(this.database, {
      id: newId('tok'),
      accountId,
      name,
      tokenHash: hashToken(token),
      prefix: token.slice(0, 7),
      last4: token.slice(-4),
      scopes,
      expiresAt: input.expiresAt ?? null,
    });
    return { token, record: toRecord(row) };
  }

  async list(accountId: string, options: { page: number; limit: number }): Promise<Page<TokenRecord>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const { rows, total } = await store.listTokens(this.database, accountId, limit, (options.page - 1) * limit);
    return { data: rows.map(toRecord), meta: { total, page: options.page, limit } };
  }

  /**
   * Revokes a token of this account; revoking twice is harmless. `actingScopes`: the scopes of the
   * credential asking (absent for the operator's CLI), which must cover the token's.
   */
  async revoke(accountId: string, tokenId: string, actingScopes?: ReadonlySet<string>): Promise<TokenRecord> {
    const existing = await store.findToken(this.database, tokenId, accountId);
    if (!existing) throw new AppError('NOT_FOUND', 'Token not found');
    if (actingScopes) assertScopesHeld(existing.scopes, actingScopes, 'revoke');
    const row = await store.revokeToken(this.database, accountId, tokenId);
    if (!row) return toRecord(existing);
    this.forget(tokenId);
    // Every other process drops it from its cache too (LISTEN waygate_tokens).
    await store.announceRevocation(this.database, tokenId);
    return toRecord(row);
  }

  /** Revokes by id whatever the account (CLI, run by the operator). */
  async revokeById(tokenId: string): Promise<TokenRecord> {
    const existing = await store.findToken(this.database, tokenId);
    if (!existing) throw new AppError('NOT_FOUND', 'Token not found');
    return this.revoke(existing.accountId, tokenId);
  }

  /** Resolves a presented token value to its account, or explains why it is refused. */
  async authenticate(value: string, now: Date = new Date()): Promise<AuthContext> {
    if (!value.startsWith('wg_') || value.length > 100) throw new AppError('UNAUTHORIZED', 'Invalid API token');
    const row = await this.lookup(hashToken(value));
    if (row.revoked_at) throw new AppError('UNAUTHORIZED', 'This API token has been revoked');
    if (row.expires_at && row.expires_at <= now) throw new AppError('UNAUTHORIZED', 'This API token has expired');
    if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= LAST_USED_PRECISION_MS) {
      await store.touchToken(this.database, row.id, now, new Date(now.getTime() - LAST_USED_PRECISION_MS));
      row.last_used_at = now;
    }
    return { accountId: row.account_id, tokenId: row.id, scopes: new Set(row.scopes) };
  }

  /** The token with this hash: from the cache while fresh (AUTH_CACHE_MS), else from the database. */
  private async lookup(hash: string): Promise<AuthenticateRow> {
    const cached = this.cache.get(hash);
    if (cached && cached.until > Date.now()) return cached.row;
    const row = await store.findTokenByHash(this.database, hash);
    if (!row) throw new AppError('UNAUTHORIZED', 'Invalid API token');
    if (this.cache.size >= AUTH_CACHE_MAX) this.cache.clear();
    this.cache.set(hash, { row, until: Date.now() + AUTH_CACHE_MS });
    return row;
  }
}
