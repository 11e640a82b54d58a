/** Contacts of an account: unique by phone number, searchable by name or phone digits. */
import { CONTROL_CHARACTERS_MESSAGE, hasControlCharacters, unsafeTextProblem } from '../platform/text.js';
import { and, eq, sql } from 'drizzle-orm';
import type { Database, PreparedStatement } from '../platform/database.js';
import { contacts } from '../platform/schema.js';
import { AppError, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { isUniqueViolation } from './accounts.js';
import { normalizePhone, phoneSearchDigits } from '../platform/phone.js';

export interface Contact {
  id: string;
  name: string;
  phoneNumber: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface Page<T> {
  data: T[];
  meta: { total: number; page: number; limit: number };
}

export interface ImportReport {
  totalRows: number;
  created: number;
  skipped: { line: number; phoneNumber: string; reason: string }[];
  rejected: { line: number; errors: FieldError[] }[];
}

export const MAX_PAGE_SIZE = 100;
export const MAX_NAME_LENGTH = 200;
const INSERT_BATCH = 1000;

/** Escapes LIKE wildcards so a search for "50%" means the characters, not a pattern. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export type NameCheck = { ok: true; name: string } | { ok: false; message: string };

/**
 * Cleans a contact or group name: line breaks and tabs (a multi-line spreadsheet cell) become one
 * space, the ends are trimmed; it must then be non-empty, at most `max` characters and free of
 * other control characters.
 */
export function checkName(input: string, max = MAX_NAME_LENGTH): NameCheck {
  const name = input.replace(/[\r\n\t]+/g, ' ').trim();
  if (name.length === 0) return { ok: false, message: 'must not be empty' };
  if (name.length > max) return { ok: false, message: `must have at most ${max} characters` };
  if (hasControlCharacters(name)) return { ok: false, message: CONTROL_CHARACTERS_MESSAGE };
  const unsafe = unsafeTextProblem(name);
  if (unsafe) return { ok: false, message: unsafe };
  return { ok: true, name };
}

export function validateName(input: string, field = 'name', max = MAX_NAME_LENGTH): string {
  const result = checkName(input, max);
  if (!result.ok) throw new AppError('VALIDATION_ERROR', `${field} ${result.message}`, [{ field, message: result.message }]);
  return result.name;
}

/**
 * Whether a client-supplied id can name a stored row at all. A NUL byte cannot be sent to
 * Postgres (the query would fail with a 500), and no id contains one, so such an id is simply
 * not found.
 */
export function isPossibleId(id: string): boolean {
  return !id.includes('\u0000');
}

export function validatePhone(input: string, field = 'phoneNumber'): string {
  const result = normalizePhone(input);
  if (!result.ok) throw new AppError('VALIDATION_ERROR', `${field} ${result.message}`, [{ field, message: result.message }]);
  return result.digits;
}

type ContactRow = { id: string; name: string; phone_number: string; created_at: Date; updated_at: Date; total: number };

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

export class ContactService {
  constructor(private readonly database: Database) {}

  /** Newest first. Unfiltered totals come from the trigger-kept counter, so page 1 is one cheap statement. */
  async list(accountId: string, options: { page: number; limit: number; search?: string | undefined }): Promise<Page<Contact>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const offset = (options.page - 1) * limit;
    const meta = { page: options.page, limit };
    const search = options.search?.trim();
    if (!search) {
      const rows = await this.database.queryPrepared<ContactRow>(unfilteredPageQuery(accountId, limit, offset));
      const total = rows[0]?.total ?? 0;
      return { data: rows.filter((row) => row.id !== null).map(rowToContact), meta: { total, ...meta } };
    }
    const rows = await this.database.queryPrepared<ContactRow>(searchPageQuery(accountId, phoneSearchDigits(search) ?? search, limit, offset));
    const total = rows[0]?.total ?? 0;
    return { data: rows.filter((row) => row.id !== null).map(rowToContact), meta: { total, ...meta } };
  }

  async get(accountId: string, id: string): Promise<Contact> {
    if (!isPossibleId(id)) throw new AppError('NOT_FOUND', 'Contact not found');
    const [row] = await this.database.db
      .select()
      .from(contacts)
      .where(and(eq(contacts.id, id), eq(contacts.accountId, accountId)));
    if (!row) throw new AppError('NOT_FOUND', 'Contact not found');
    return row;
  }

  async create(accountId: string, input: { name: string; phoneNumber: string }): Promise<Contact> {
    const name = validateName(input.name);
    const phoneNumber = validatePhone(input.phoneNumber);
    try {
      const [row] = await this.database.db
        .insert(contacts)
        .values({ id: newId('ct'), accountId, name, phoneNumber })
        .returning();
      return row!;
    } catch (error) {
      if (isUniqueViolation(error)) throw contactExists(phoneNumber);
      throw error;
    }
  }

  async update(accountId: string, id: string, input: { name?: string | undefined; phoneNumber?: string | undefined }): Promise<Contact> {
    const changes: { name?: string; phoneNumber?: string } = {};
    if (!isPossibleId(id)) throw new AppError('NOT_FOUND', 'Contact not found');
    if (input.name !== undefined) changes.name = validateName(input.name);
    if (input.phoneNumber !== undefined) changes.phoneNumber = validatePhone(input.phoneNumber);
    try {
      const [row] = await this.database.db
        .update(contacts)
        // The database clock, like createdAt, so updatedAt is never before createdAt.
        .set({ ...changes, updatedAt: sql`now()` })
        .where(and(eq(contacts.id, id), eq(contacts.accountId, accountId)))
        .returning();
      if (!row) throw new AppError('NOT_FOUND', 'Contact not found');
      return row;
    } catch (error) {
      if (isUniqueViolation(error)) throw contactExists(changes.phoneNumber!);
      throw error;
    }
  }

  async remove(accountId: string, id: string): Promise<void> {
    if (!isPossibleId(id)) throw new AppError('NOT_FOUND', 'Contact not found');
    const deleted = await this.database.db
      .delete(contacts)
      .where(and(eq(contacts.id, id), eq(contacts.accountId, accountId)))
      .returning({ id: contacts.id });
    if (deleted.length === 0) throw new AppError('NOT_FOUND', 'Contact not found');
  }

  /**
   * Imports a CSV with a `name,phoneNumber` header. Every row is validated first; the valid,
   * new ones are inserted in one transaction (all or nothing), so the report always describes
   * exactly what happened: created, skipped duplicates (already in the account or earlier in
   * the file) and rejected rows, each with the line number of the file where its record starts
   * (the header is line 1).
   */
  async importCsv(accountId: string, csv: string): Promise<ImportReport> {
    let records: CsvRecord[];
    try {
      records = parseCsv(csv);
    } catch (error) {
      if (!(error instanceof CsvSyntaxError)) throw error;
      throw new AppError('VALIDATION_ERROR', `The CSV could not be parsed: ${error.message}`, [
        { field: 'body', message: `line ${error.line}: ${error.message}` },
      ]);
    }
    const [header, ...rows] = records;
    if (!header) {
      throw new AppError('VALIDATION_ERROR', 'The CSV is empty: send a name,phoneNumber header line, then one contact per line', [
        { field: 'body', message: 'must have a name,phoneNumber header' },
      ]);
    }
    const columns = header.fields.map(headerKey);
    const nameColumn = columns.indexOf('name');
    const phoneColumn = columns.indexOf('phonenumber');
    const missing = [nameColumn < 0 ? 'name' : undefined, phoneColumn < 0 ? 'phoneNumber' : undefined].filter((c) => c !== undefined);
    if (missing.length > 0) {
      throw new AppError(
        'VALIDATION_ERROR',
        `The CSV header (line ${header.line}) must contain the columns name,phoneNumber (missing: ${missing.join(', ')})`,
        [{ field: 'header', message: `missing column ${missing.join(', ')}` }],
      );
    }

    const report: ImportReport = { totalRows: rows.length, created: 0, skipped: [], rejected: [] };
    const candidates: { line: number; name: string; phoneNumber: string }[] = [];
    const seen = new Map<string, number>();
    for (const { fields, line } of rows) {
      const errors: FieldError[] = [];
      const name = checkName(fields[nameColumn] ?? '');
      if (!name.ok) errors.push({ field: 'name', message: name.message });
      const phone = normalizePhone(fields[phoneColumn] ?? '');
      if (!phone.ok) errors.push({ field: 'phoneNumber', message: phone.message });
      if (!name.ok || !phone.ok) {
        report.rejected.push({ line, errors });
        continue;
      }
      const firstLine = seen.get(phone.digits);
      if (firstLine !== undefined) {
        report.skipped.push({ line, phoneNumber: phone.digits, reason: `duplicate of line ${firstLine} in this file` });
        continue;
      }
      seen.set(phone.digits, line);
      candidates.push({ line, name: name.name, phoneNumber: phone.digits });
    }

    const skippedExisting: ImportReport['skipped'] = [];
    let created = 0;
    await this.database.db.transaction(async (tx) => {
      for (let start = 0; start < candidates.length; start += INSERT_BATCH) {
        const batch = candidates.slice(start, start + INSERT_BATCH);
        const inserted = await tx
          .insert(contacts)
          .values(batch.map((c) => ({ id: newId('ct'), accountId, name: c.name, phoneNumber: c.phoneNumber })))
          .onConflictDoNothing({ target: [contacts.accountId, contacts.phoneNumber] })
          .returning({ phoneNumber: contacts.phoneNumber });
        const insertedPhones = new Set(inserted.map((row) => row.phoneNumber));
        created += insertedPhones.size;
        for (const c of batch) {
          if (!insertedPhones.has(c.phoneNumber)) {
            skippedExisting.push({ line: c.line, phoneNumber: c.phoneNumber, reason: 'a contact with this phone number already exists' });
          }
        }
      }
    });
    // Only what was committed is reported (a failed transaction throws above and reports nothing).
    report.created = created;
    report.skipped = [...report.skipped, ...skippedExisting].sort((a, b) => a.line - b.line);
    return report;
  }
}

/** "Phone Number", "phone_number" and "phoneNumber" all name the phoneNumber column. */
function headerKey(column: string): string {
  return column.trim().toLowerCase().replace(/[\s_-]/g, '');
}

export interface CsvRecord {
  /** The line of the file on which the record starts (1-based). */
  line: number;
  fields: string[];
}

export class CsvSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
    this.name = 'CsvSyntaxError';
  }
}

const COMMA = 44;
const QUOTE = 34;
const LF = 10;
const CR = 13;

function countLineBreaks(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === LF) count += 1;
    else if (c === CR && text.charCodeAt(i + 1) !== LF) count += 1;
  }
  return count;
}

/**
 * RFC 4180 CSV, read leniently: records end at LF, CRLF or a lone CR (mixed endings are fine);
 * fields may be quoted, with "" for a quote and line breaks inside quotes; spaces around fields
 * are trimmed; a leading UTF-8 BOM is ignored; blank records (nothing but separators and
 * spaces) are skipped. Each record carries the line on which it starts, counted the same way.
 * Written here rather than taken from a parser library because the report's line numbers must
 * match what a user sees in an editor, also for CRLF files and quoted line breaks.
 */
export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  const length = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < length) {
    const startLine = line;
    const fields: string[] = [];
    for (;;) {
      let j = i;
      while (j < length && (text[j] === ' ' || text[j] === '\t')) j += 1;
      if (text.charCodeAt(j) === QUOTE) {
        const quoteLine = line;
        let value = '';
        let k = j + 1;
        for (;;) {
          const close = text.indexOf('"', k);
          if (close === -1) throw new CsvSyntaxError(`a quoted field opened on line ${quoteLine} is never closed`, quoteLine);
          const chunk = text.slice(k, close);
          value += chunk;
          line += countLineBreaks(chunk);
          if (text.charCodeAt(close + 1) === QUOTE) {
            value += '"';
            k = close + 2;
            continue;
          }
          k = close + 1;
          break;
        }
        while (k < length && (text[k] === ' ' || text[k] === '\t')) k += 1;
        const next = text.charCodeAt(k);
        if (k < length && next !== COMMA && next !== LF && next !== CR) {
          throw new CsvSyntaxError(`unexpected text after a closing quote on line ${line} (a quote inside a quoted field must be doubled)`, line);
        }
        fields.push(value);
        i = k;
      } else {
        let k = j;
        while (k < length) {
          const c = text.charCodeAt(k);
          if (c === COMMA || c === LF || c === CR) break;
          k += 1;
        }
        fields.push(text.slice(j, k).trim());
        i = k;
      }
      if (text.charCodeAt(i) === COMMA) {
        i += 1;
        continue;
      }
      break;
    }
    if (text.charCodeAt(i) === CR) {
      i += text.charCodeAt(i + 1) === LF ? 2 : 1;
      line += 1;
    } else if (text.charCodeAt(i) === LF) {
      i += 1;
      line += 1;
    }
    if (fields.some((field) => field !== '')) records.push({ line: startLine, fields });
  }
  return records;
}

export function contactExists(phoneNumber: string): AppError {
  return new AppError('CONTACT_EXISTS', `A contact with phone number ${phoneNumber} already exists`, [
    { field: 'phoneNumber', message: 'already used by another contact' },
  ]);
}
