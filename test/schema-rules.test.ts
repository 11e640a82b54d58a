/**
 * Rules every table of the schema keeps, read from the migrated database's catalog, so that a
 * column a later migration adds is held to them too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/platform/database.js';
import { openTestDatabase } from './helpers.js';

let database: Database;
beforeAll(async () => {
  database = await openTestDatabase();
}, 60_000);
afterAll(async () => database.close());

/** An identifier column: id, *_id, and the ids named otherwise (migration 0057). */
const IDENTIFIER = `(a.attname = 'id' OR a.attname LIKE '%\\_id' OR a.attname IN ('peer', 'lid', 'peer_lid', 'reply_to'))`;

describe('identifier columns', () => {
  it('are text COLLATE "C" in every table, so index descents and sorts compare bytes', async () => {
    const columns = await database.query<{ column: string; collation: string }>(
      `SELECT c.relname || '.' || a.attname AS column, coll.collname AS collation
         FROM pg_class c
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         JOIN pg_collation coll ON coll.oid = a.attcollation
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
          AND a.atttypid = 'text'::regtype AND ${IDENTIFIER}
        ORDER BY 1`,
    );
    // Some forty tables hold identifiers; far fewer would mean the query found the wrong schema.
    expect(columns.length).toBeGreaterThan(80);
    expect(columns.filter((c) => c.collation !== 'C')).toEqual([]);
  });
});
