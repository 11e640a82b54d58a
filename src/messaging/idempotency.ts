/**
 * Idempotency-Key (≤ 255 characters, kept 24 h): a repeat with the same body returns the first
 * response and does nothing; with a different body it is 409 IDEMPOTENCY_KEY_REUSED. A repeat
 * that arrives while the first is still running waits for it. If the first fails with an error,
 * the key is released so the request can be tried again.
 */
import { hash } from 'node:crypto';
import type { Database } from '../platform/database.js';
import { AppError, invalidFields } from '../platform/errors.js';

export interface StoredResponse {
  statusCode: number;
  body: unknown;
}

const KEEP_HOURS = 24;
const WAIT_FOR_FIRST_MS = 30_000;

/** A canonical hash of a JSON body: key order does not matter. */
function hashBody(body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]));
    }
    return value;
  };
  return hash('sha256', JSON.stringify(canonical(body) ?? null), 'hex');
}

/** The longest Idempotency-Key taken (the route's header schema publishes it). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export class IdempotencyService {
  constructor(private readonly database: Database) {}

  async run(accountId: string, key: string, body: unknown, work: () => Promise<StoredResponse>): Promise<StoredResponse & { replayed: boolean }> {
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw invalidFields([{ field: 'Idempotency-Key', message: `must have 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters` }]);
    }
    const requestHash = hashBody(body);
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (;;) {
      // Expired keys are free again.
      await this.database.query(
        `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_at < now() - interval '${KEEP_HOURS} hours'`,
        [accountId, key],
      );
      const claimed = await this.database.query(
        `INSERT INTO idempotency_keys (account_id, key, request_hash) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING key`,
        [accountId, key, requestHash],
      );
      if (claimed.length > 0) break;
      const [existing] = await this.database.query<{ request_hash: string; status_code: number | null; response: unknown }>(
        'SELECT request_hash, status_code, response FROM idempotency_keys WHERE account_id = $1 AND key = $2',
        [accountId, key],
      );
      if (!existing) continue;
      if (existing.request_hash !== requestHash) {
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body; use a new key for a new request');
      }
      if (existing.status_code !== null) return { statusCode: existing.status_code, body: existing.response, replayed: true };
      if (Date.now() > deadline) throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being processed; retry later');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    try {
      const response = await work();
      await this.database.query('UPDATE idempotency_keys SET status_code = $3, response = $4 WHERE account_id = $1 AND key = $2', [
        accountId,
        key,
        response.statusCode,
        JSON.stringify(response.body),
      ]);
      return { ...response, replayed: false };
    } catch (error) {
      await this.database.query('DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2', [accountId, key]).catch(() => undefined);
      throw error;
    }
  }

  async purgeExpired(): Promise<number> {
    const rows = await this.database.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '${KEEP_HOURS} hours' RETURNING key`);
    return rows.length;
  }
}
