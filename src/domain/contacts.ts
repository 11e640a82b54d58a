/** Contacts of an account: unique by phone number, searchable by name or phone digits. */
import { and, eq } from 'drizzle-orm';
import { parse } from 'csv-parse/sync';
import type { Database } from '../db/client.js';
import { contacts } from '../db/schema.js';
import { AppError, type FieldError } from '../errors.js';
import { newId } from '../ids.js';
import { isUniqueViolation } from './accounts.js';
import { normalizePhone, phoneSearchDigits } from './phone.js';

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

function validateName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw new AppError('VALIDATION_ERROR', 'name must not be empty', [{ field: 'name', message: 'must not be empty' }]);
  if (trimmed.length > MAX_NAME_LENGTH) {
    throw new AppError('VALIDATION_ERROR', `name must have at most ${MAX_NAME_LENGTH} characters`, [
      { field: 'name', message: `must have at most ${MAX_NAME_LENGTH} characters` },
    ]);
  }
  return trimmed;
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

export class ContactService {
  constructor(private readonly database: Database) {}

  /** Newest first. Unfiltered totals come from the trigger-kept counter, so page 1 is one cheap statement. */
  async list(accountId: string, options: { page: number; limit: number; search?: string | undefined }): Promise<Page<Contact>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const offset = (options.page - 1) * limit;
    const meta = { page: options.page, limit };
    const search = options.search?.trim();
    if (!search) {
      const rows = await this.database.query<ContactRow>(
        `SELECT c.id, c.name, c.phone_number, c.created_at, c.updated_at, a.contacts_count AS total
           FROM accounts a
           LEFT JOIN LATERAL (
             SELECT id, name, phone_number, created_at, updated_at FROM contacts
              WHERE account_id = a.id ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3
           ) c ON true
          WHERE a.id = $1`,
        [accountId, limit, offset],
      );
      const total = rows[0]?.total ?? 0;
      return { data: rows.filter((row) => row.id !== null).map(rowToContact), meta: { total, ...meta } };
    }
    const pattern = `%${escapeLike(phoneSearchDigits(search) ?? search)}%`;
    const where = `account_id = $1 AND ${SEARCH_EXPRESSION} LIKE lower($2)`;
    const rows = await this.database.query<ContactRow>(
      `SELECT id, name, phone_number, created_at, updated_at, count(*) OVER () AS total
         FROM contacts WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
      [accountId, pattern, limit, offset],
    );
    let total = rows[0]?.total;
    if (total === undefined) {
      // Past the last page the window count is not available; count on its own.
      const counted = offset === 0 ? [] : await this.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM contacts WHERE ${where}`, [accountId, pattern]);
      total = counted[0]?.n ?? 0;
    }
    return { data: rows.map(rowToContact), meta: { total, ...meta } };
  }

  async get(accountId: string, id: string): Promise<Contact> {
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
    const changes: Partial<typeof contacts.$inferInsert> = { updatedAt: new Date() };
    if (input.name !== undefined) changes.name = validateName(input.name);
    if (input.phoneNumber !== undefined) changes.phoneNumber = validatePhone(input.phoneNumber);
    try {
      const [row] = await this.database.db
        .update(contacts)
        .set(changes)
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
   * the file) and rejected rows, each with its line number.
   */
  async importCsv(accountId: string, csv: string): Promise<ImportReport> {
    let records: { record: Record<string, string>; line: number }[];
    try {
      records = (
        parse(csv, {
          columns: (header: string[]) => header.map((column) => column.trim()),
          bom: true,
          skip_empty_lines: true,
          trim: true,
          relax_column_count: true,
          info: true,
        }) as { record: Record<string, string>; info: { lines: number } }[]
      ).map(({ record, info }) => ({ record, line: info.lines }));
    } catch (error) {
      throw new AppError('VALIDATION_ERROR', `The CSV could not be parsed: ${(error as Error).message}`, [
        { field: 'body', message: 'must be CSV with a name,phoneNumber header' },
      ]);
    }
    if (!/^\s*\S/.test(csv)) {
      throw new AppError('VALIDATION_ERROR', 'The CSV is empty', [{ field: 'body', message: 'must have a name,phoneNumber header' }]);
    }
    const header = csv.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0]!.split(',').map((column) => column.trim().replace(/^"|"$/g, ''));
    const missing = ['name', 'phoneNumber'].filter((column) => !header.includes(column));
    if (missing.length > 0) {
      throw new AppError('VALIDATION_ERROR', `The CSV header must contain name,phoneNumber (missing: ${missing.join(', ')})`, [
        { field: 'header', message: `missing column ${missing.join(', ')}` },
      ]);
    }

    const report: ImportReport = { totalRows: records.length, created: 0, skipped: [], rejected: [] };
    const candidates: { line: number; name: string; phoneNumber: string }[] = [];
    const seen = new Map<string, number>();
    for (const { record, line } of records) {
      const errors: FieldError[] = [];
      const name = (record.name ?? '').trim();
      if (name.length === 0) errors.push({ field: 'name', message: 'must not be empty' });
      else if (name.length > MAX_NAME_LENGTH) errors.push({ field: 'name', message: `must have at most ${MAX_NAME_LENGTH} characters` });
      const phone = normalizePhone(record.phoneNumber ?? '');
      if (!phone.ok) errors.push({ field: 'phoneNumber', message: phone.message });
      if (errors.length > 0 || !phone.ok) {
        report.rejected.push({ line, errors });
        continue;
      }
      const firstLine = seen.get(phone.digits);
      if (firstLine !== undefined) {
        report.skipped.push({ line, phoneNumber: phone.digits, reason: `duplicate of line ${firstLine} in this file` });
        continue;
      }
      seen.set(phone.digits, line);
      candidates.push({ line, name, phoneNumber: phone.digits });
    }

    await this.database.db.transaction(async (tx) => {
      for (let start = 0; start < candidates.length; start += INSERT_BATCH) {
        const batch = candidates.slice(start, start + INSERT_BATCH);
        const inserted = await tx
          .insert(contacts)
          .values(batch.map((c) => ({ id: newId('ct'), accountId, name: c.name, phoneNumber: c.phoneNumber })))
          .onConflictDoNothing({ target: [contacts.accountId, contacts.phoneNumber] })
          .returning({ phoneNumber: contacts.phoneNumber });
        const created = new Set(inserted.map((row) => row.phoneNumber));
        report.created += created.size;
        for (const c of batch) {
          if (!created.has(c.phoneNumber)) {
            report.skipped.push({ line: c.line, phoneNumber: c.phoneNumber, reason: 'a contact with this phone number already exists' });
          }
        }
      }
    });
    report.skipped.sort((a, b) => a.line - b.line);
    return report;
  }
}

export function contactExists(phoneNumber: string): AppError {
  return new AppError('CONTACT_EXISTS', `A contact with phone number ${phoneNumber} already exists`, [
    { field: 'phoneNumber', message: 'already used by another contact' },
  ]);
}
