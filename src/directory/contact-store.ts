/**
 * Every statement on contacts. contacts_count on accounts and contact_search_grams are kept by
 * triggers on this table (migrations 0003, 0004): nothing here writes them. Phone numbers are
 * unique per account (contacts_account_phone_key); an insert that breaks it fails with a unique
 * violation, which the service turns into CONTACT_EXISTS.
 */
import type { Database, PreparedStatement, Queryable } from '../platform/database.js';
import type { Contact } from './contacts.js';

/** Escapes LIKE wildcards so a search for "50%" means the characters, not a pattern. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const CONTACT_COLUMNS = 'id, name, phone_number AS "phoneNumber", created_at AS "createdAt", updated_at AS "updatedAt"';

export type ContactRow = { id: string; name: string; phone_number: string; created_at: Date; updated_at: Date; total: number };

const rowToContact = (row: ContactRow): Contact => ({
  id: row.id,
  name: row.name,
  phoneNumber: row.phone_number,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** Must match the expression of contacts_search_trgm_idx exactly, or the index is not used. */
const SEARCH_EXPRESSION = `(lower(name) || chr(1) || phone_number)`;

/**
 * The one statement of an unfiltered listing page: the rows and, on every row, the account's
 * trigger-kept contacts_count as the total (one row of NULLs when the page is empty).
 * Exported so the contacts benchmark's bare route runs exactly this SQL.
 *
 * Contact queries order by `created_at DESC NULLS LAST, id DESC NULLS LAST`, the exact order of
 * contacts_account_created_idx (Drizzle writes DESC indexes NULLS LAST). Plain `DESC` means NULLS
 * FIRST, which that index cannot give, and PostgreSQL then reads and sorts the whole account
 * (300 ms at a million contacts) even though both columns are NOT NULL.
 */
export function unfilteredPageQuery(accountId: string, limit: number, offset = 0): PreparedStatement {
  return {
    name: 'contacts_list_page',
    text: `SELECT c.id, c.name, c.phone_number, c.created_at, c.updated_at, a.contacts_count AS total
             FROM accounts a
             LEFT JOIN LATERAL (
               SELECT id, name, phone_number, created_at, updated_at FROM contacts
                WHERE account_id = a.id ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST LIMIT $2 OFFSET $3
             ) c ON true
            WHERE a.id = $1`,
    values: [accountId, limit, offset],
  };
}

/**
 * A page of contacts matching a search walks the newest-first index while matches are dense
 * enough, and takes every match from the trigram index then sorts them when they are rare. The
 * walk tests about (offset + limit) * contacts / total rows (~0.2 µs each, on the stored
 * search_text), the trigram path rechecks and sorts `total` rows, each about SPARSE_ROW_COST times
 * dearer (~1.7 µs: a random heap visit; measured on PostgreSQL 15 at a million contacts). For page
 * 1 of 50 among a million contacts the walk wins from about 2,500 matches up.
 */
const SPARSE_ROW_COST = 8;

/**
 * The one statement of a search page: contacts whose search text contains `needle`
 * (case-insensitive), newest first, each row carrying the exact total (one row of NULLs when the
 * page is empty).
 *
 * The total comes first, once (a materialized CTE): a needle of at most 3 characters reads it from
 * contact_search_grams, kept by triggers (migration 0004), instead of counting every match; a
 * longer one counts through the trigram index, where the extra characters keep candidates few.
 * Knowing the exact total, the statement then picks the page's plan itself, by one-time filters,
 * rather than leave it to LIKE selectivity estimates that are often 100 times off: the walk
 * (strpos on search_text, the search text stored by migration 0007, which no index serves, so the
 * planner keeps to the newest-first index) or the trigram path (OFFSET 0 keeps the sort out of the index scan).
 * Nothing runs past the total.
 */
export function searchPageQuery(accountId: string, needle: string, limit: number, offset = 0): PreparedStatement {
  const dense = `t.total::float8 * t.total * ${SPARSE_ROW_COST} >= ($4 + $5)::float8 * t.contacts`;
  return {
    name: 'contacts_search_page',
    text: `WITH t AS MATERIALIZED (
             SELECT a.contacts_count AS contacts,
                    CASE WHEN char_length(lower($2)) <= 3
                         THEN coalesce((SELECT g.contacts FROM contact_search_grams g WHERE g.account_id = $1 AND g.gram = lower($2)), 0)
                         ELSE (SELECT count(*)::int FROM contacts WHERE account_id = $1 AND ${SEARCH_EXPRESSION} LIKE lower($3))
                    END AS total
               FROM accounts a WHERE a.id = $1
           )
           SELECT c.id, c.name, c.phone_number, c.created_at, c.updated_at, t.total
             FROM t LEFT JOIN LATERAL (
               (SELECT id, name, phone_number, created_at, updated_at FROM contacts
                 WHERE t.total > $5 AND ${dense}
                   AND account_id = $1 AND strpos(search_text, lower($2)) > 0
                 ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST LIMIT $4 OFFSET $5)
               UNION ALL
               (SELECT * FROM (SELECT id, name, phone_number, created_at, updated_at FROM contacts
                                WHERE t.total > $5 AND NOT (${dense})
                                  AND account_id = $1 AND ${SEARCH_EXPRESSION} LIKE lower($3) OFFSET 0) AS matches
                 ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST LIMIT $4 OFFSET $5)
             ) c ON true`,
    values: [accountId, needle, `%${escapeLike(needle)}%`, limit, offset],
  };
}


/** A page of the account's contacts, newest first, matching `needle` when given (see searchPageQuery). */
export async function pageOfContacts(database: Pick<Database, 'queryPrepared'>, accountId: string, limit: number, offset: number, needle?: string): Promise<{ rows: Contact[]; total: number }> {
  const rows = await database.queryPrepared<ContactRow>(
    needle === undefined ? unfilteredPageQuery(accountId, limit, offset) : searchPageQuery(accountId, needle, limit, offset),
  );
  return { rows: rows.filter((row) => row.id !== null).map(rowToContact), total: rows[0]?.total ?? 0 };
}

export async function findContact(db: Queryable, accountId: string, id: string): Promise<Contact | undefined> {
  const [row] = await db.query<Contact>(`SELECT ${CONTACT_COLUMNS} FROM contacts WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return row;
}

export async function insertContact(db: Queryable, row: { id: string; accountId: string; name: string; phoneNumber: string }): Promise<Contact> {
  const [inserted] = await db.query<Contact>(
    `INSERT INTO contacts (id, account_id, name, phone_number) VALUES ($1, $2, $3, $4) RETURNING ${CONTACT_COLUMNS}`,
    [row.id, row.accountId, row.name, row.phoneNumber],
  );
  return inserted!;
}

/** Changes name and/or phone number; updated_at from the database clock, like created_at, so it is never before it. */
export async function updateContact(db: Queryable, accountId: string, id: string, changes: { name?: string; phoneNumber?: string }): Promise<Contact | undefined> {
  const [row] = await db.query<Contact>(
    `UPDATE contacts SET name = COALESCE($3, name), phone_number = COALESCE($4, phone_number), updated_at = now()
      WHERE id = $1 AND account_id = $2 RETURNING ${CONTACT_COLUMNS}`,
    [id, accountId, changes.name ?? null, changes.phoneNumber ?? null],
  );
  return row;
}

export async function deleteContact(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM contacts WHERE id = $1 AND account_id = $2 RETURNING id', [id, accountId]);
  return rows.length > 0;
}

/** Inserts the contacts whose phone number the account does not have yet; the phone numbers inserted. */
export async function insertNewContacts(tx: Queryable, accountId: string, batch: { id: string; name: string; phoneNumber: string }[]): Promise<Set<string>> {
  const rows = await tx.query<{ phone_number: string }>(
    `INSERT INTO contacts (id, account_id, name, phone_number)
     SELECT id, $1, name, phone_number FROM unnest($2::text[], $3::text[], $4::text[]) AS s(id, name, phone_number)
     ON CONFLICT (account_id, phone_number) DO NOTHING RETURNING phone_number`,
    [accountId, batch.map((c) => c.id), batch.map((c) => c.name), batch.map((c) => c.phoneNumber)],
  );
  return new Set(rows.map((row) => row.phone_number));
}

/**
 * The ones of `contactIds` that are contacts of the account, key-share locked until commit: a
 * contact deleted concurrently either waits for this transaction (and then leaves the group
 * through the cascade) or is already gone here; without the lock a member insert could fail its
 * foreign key check.
 */
export async function lockContacts(tx: Queryable, accountId: string, contactIds: string[]): Promise<Set<string>> {
  const rows = await tx.query<{ id: string }>('SELECT id FROM contacts WHERE account_id = $1 AND id = ANY($2::text[]) FOR KEY SHARE', [accountId, contactIds]);
  return new Set(rows.map((row) => row.id));
}
