/** The quota period rule (SQL function waygate_period), on the real database. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/platform/database.js';
import { openTestDatabase } from './helpers.js';

let database: Database;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => database.close());

async function period(anchor: string, kind: 'month' | 'year', at: string): Promise<[string, string]> {
  const [row] = await database.query<{ period_start: Date; period_end: Date }>('SELECT * FROM waygate_period($1, $2, $3)', [anchor, kind, at]);
  return [row!.period_start.toISOString(), row!.period_end.toISOString()];
}

describe('quota periods', () => {
  it('counts whole months from the anchor', async () => {
    expect(await period('2026-01-15T12:00:00Z', 'month', '2026-01-20T00:00:00Z')).toEqual(['2026-01-15T12:00:00.000Z', '2026-02-15T12:00:00.000Z']);
    expect(await period('2026-01-15T12:00:00Z', 'month', '2026-03-15T11:59:59Z')).toEqual(['2026-02-15T12:00:00.000Z', '2026-03-15T12:00:00.000Z']);
    expect(await period('2026-01-15T12:00:00Z', 'month', '2026-03-15T12:00:00Z')).toEqual(['2026-03-15T12:00:00.000Z', '2026-04-15T12:00:00.000Z']);
  });

  it('clamps at month ends, each boundary counted from the anchor', async () => {
    expect(await period('2026-01-31T10:00:00Z', 'month', '2026-03-01T00:00:00Z')).toEqual(['2026-02-28T10:00:00.000Z', '2026-03-31T10:00:00.000Z']);
    expect(await period('2028-01-31T10:00:00Z', 'month', '2028-02-29T11:00:00Z')).toEqual(['2028-02-29T10:00:00.000Z', '2028-03-31T10:00:00.000Z']);
  });

  it('counts years for yearly plans', async () => {
    expect(await period('2026-01-15T12:00:00Z', 'year', '2027-06-01T00:00:00Z')).toEqual(['2027-01-15T12:00:00.000Z', '2028-01-15T12:00:00.000Z']);
  });

  it('treats a moment before the anchor as the first period', async () => {
    expect(await period('2026-05-01T00:00:00Z', 'month', '2026-04-01T00:00:00Z')).toEqual(['2026-05-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z']);
  });
});
