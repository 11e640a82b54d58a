/** Contacts of an account: unique by phone number, searchable by name or phone digits. */
import { CONTROL_CHARACTERS_MESSAGE, hasControlCharacters, unsafeTextProblem } from '../platform/text.js';
import { CONTACT_NAME_MAX } from '../platform/text-limits.js';
import type { Database } from '../platform/database.js';
import { AppError, invalidFields, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { isUniqueViolation } from './accounts.js';
import { normalizePhone, phoneSearchDigits } from '../platform/phone.js';
import { analyseIfStale } from '../platform/table-statistics.js';
import * as store from './contact-store.js';

/** The contacts benchmark's bare route runs exactly the SQL of a listing page. */
export { escapeLike, unfilteredPageQuery } from './contact-store.js';

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
const INSERT_BATCH = 1000;

export type NameCheck = { ok: true; name: string } | { ok: false; message: string };

/**
 * Cleans a contact or group name: line breaks and tabs (a multi-line spreadsheet cell) become one
 * space, the ends are trimmed; it must then be non-empty, at most `max` characters and free of
 * other control characters.
 */
export function checkName(input: string, max = CONTACT_NAME_MAX): NameCheck {
  const name = input.replace(/[\r\n\t]+/g, ' ').trim();
  if (name.length === 0) return { ok: false, message: 'must not be empty' };
  if (name.length > max) return { ok: false, message: `must have at most ${max} characters` };
  if (hasControlCharacters(name)) return { ok: false, message: CONTROL_CHARACTERS_MESSAGE };
  const unsafe = unsafeTextProblem(name);
  if (unsafe) return { ok: false, message: unsafe };
  return { ok: true, name };
}

export function validateName(input: string, field = 'name', max = CONTACT_NAME_MAX): string {
  const result = checkName(input, max);
  if (!result.ok) throw invalidFields([{ field, message: result.message }]);
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
  if (!result.ok) throw invalidFields([{ field, message: result.message }]);
  return result.digits;
}

export class ContactService {
  constructor(private readonly database: Database) {}

  /** Newest first. Unfiltered totals come from the trigger-kept counter, so page 1 is one cheap statement. */
  async list(accountId: string, options: { page: number; limit: number; search?: string | undefined }): Promise<Page<Contact>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const search = options.search?.trim();
    const needle = search ? (phoneSearchDigits(search) ?? search) : undefined;
    const { rows, total } = await store.pageOfContacts(this.database, accountId, limit, (options.page - 1) * limit, needle);
    return { data: rows, meta: { total, page: options.page, limit } };
  }

  async get(accountId: string, id: string): Promise<Contact> {
    const row = isPossibleId(id) ? await store.findContact(this.database, accountId, id) : undefined;
    if (!row) throw contactNotFound();
    return row;
  }

  async create(accountId: string, input: { name: string; phoneNumber: string }): Promise<Contact> {
    const name = validateName(input.name);
    const phoneNumber = validatePhone(input.phoneNumber);
    try {
      return await store.insertContact(this.database, { id: newId('ct'), accountId, name, phoneNumber });
    } catch (error) {
      if (isUniqueViolation(error)) throw contactExists(phoneNumber);
      throw error;
    }
  }

  async update(accountId: string, id: string, input: { name?: string | undefined; phoneNumber?: string | undefined }): Promise<Contact> {
    const changes: { name?: string; phoneNumber?: string } = {};
    if (!isPossibleId(id)) throw contactNotFound();
    if (input.name !== undefined) changes.name = validateName(input.name);
    if (input.phoneNumber !== undefined) changes.phoneNumber = validatePhone(input.phoneNumber);
    try {
      const row = await store.updateContact(this.database, accountId, id, changes);
      if (!row) throw contactNotFound();
      return row;
    } catch (error) {
      if (isUniqueViolation(error)) throw contactExists(changes.phoneNumber!);
      throw error;
    }
  }

  async remove(accountId: string, id: string): Promise<void> {
    if (!isPossibleId(id) || !(await store.deleteContact(this.database, accountId, id))) throw contactNotFound();
  }

  /**
   * Imports a CSV with a `name,phoneNumber` header. Every row is validated first; the valid,
   * new ones are inserted in one transaction (all or nothing), so the report always describes
   * exactly what happened: created, skipped duplicates (already in the account or earlier in
   * the file) and rejected rows, each with the line number of the file where its record starts
   * (the header is line 1).
   */
  async importCsv(accountId: string, csv: string): Promise<ImportReport> {
    const { report, candidates } = checkImport(readImportCsv(csv));
    const skippedExisting: ImportReport['skipped'] = [];
    let created = 0;
    await this.database.transaction(async (tx) => {
      for (let start = 0; start < candidates.length; start += INSERT_BATCH) {
        const batch = candidates.slice(start, start + INSERT_BATCH);
        const inserted = await store.insertNewContacts(tx, accountId, batch.map((c) => ({ id: newId('ct'), name: c.name, phoneNumber: c.phoneNumber })));
        created += inserted.size;
        for (const c of batch) {
          if (!inserted.has(c.phoneNumber)) skippedExisting.push({ line: c.line, phoneNumber: c.phoneNumber, reason: 'a contact with this phone number already exists' });
        }
      }
      await analyseIfStale(tx, 'contacts', created);
    });
    // Only what was committed is reported (a failed transaction throws above and reports nothing).
    report.created = created;
    report.skipped = [...report.skipped, ...skippedExisting].sort((a, b) => a.line - b.line);
    return report;
  }
}

const contactNotFound = (): AppError => new AppError('NOT_FOUND', 'Contact not found');

interface ImportCandidate {
  line: number;
  name: string;
  phoneNumber: string;
}

/** The records of an import and the columns of name and phoneNumber, or a 400 saying what is wrong with the file. */
function readImportCsv(csv: string): { rows: CsvRecord[]; nameColumn: number; phoneColumn: number } {
  let records: CsvRecord[];
  try {
    records = parseCsv(csv);
  } catch (error) {
    if (!(error instanceof CsvSyntaxError)) throw error;
    throw new AppError('VALIDATION_ERROR', `The CSV could not be parsed: ${error.message}`, [{ field: 'body', message: `line ${error.line}: ${error.message}` }]);
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
    throw new AppError('VALIDATION_ERROR', `The CSV header (line ${header.line}) must contain the columns name,phoneNumber (missing: ${missing.join(', ')})`, [
      { field: 'header', message: `missing column ${missing.join(', ')}` },
    ]);
  }
  return { rows, nameColumn, phoneColumn };
}

/** Validates every row: the rejected and the duplicates within the file go to the report, the rest are candidates. */
function checkImport({ rows, nameColumn, phoneColumn }: ReturnType<typeof readImportCsv>): { report: ImportReport; candidates: ImportCandidate[] } {
  const report: ImportReport = { totalRows: rows.length, created: 0, skipped: [], rejected: [] };
  const candidates: ImportCandidate[] = [];
  const seen = new Map<string, number>();
  for (const { fields, line } of rows) {
    const name = checkName(fields[nameColumn] ?? '');
    const phone = normalizePhone(fields[phoneColumn] ?? '');
    if (!name.ok || !phone.ok) {
      const errors: FieldError[] = [];
      if (!name.ok) errors.push({ field: 'name', message: name.message });
      if (!phone.ok) errors.push({ field: 'phoneNumber', message: phone.message });
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
  return { report, candidates };
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
  const cursor = { text, i: text.charCodeAt(0) === 0xfeff ? 1 : 0, line: 1 };
  while (cursor.i < text.length) {
    const startLine = cursor.line;
    const fields: string[] = [];
    for (;;) {
      let j = cursor.i;
      while (j < text.length && (text[j] === ' ' || text[j] === '\t')) j += 1;
      fields.push(text.charCodeAt(j) === QUOTE ? readQuoted(cursor, j) : readPlain(cursor, j));
      if (text.charCodeAt(cursor.i) !== COMMA) break;
      cursor.i += 1;
    }
    if (text.charCodeAt(cursor.i) === CR) {
      cursor.i += text.charCodeAt(cursor.i + 1) === LF ? 2 : 1;
      cursor.line += 1;
    } else if (text.charCodeAt(cursor.i) === LF) {
      cursor.i += 1;
      cursor.line += 1;
    }
    if (fields.some((field) => field !== '')) records.push({ line: startLine, fields });
  }
  return records;
}

/** Where parseCsv is: the offset in the text and the line it is on. */
interface CsvCursor {
  text: string;
  i: number;
  line: number;
}

/** A quoted field opening at `quote`; leaves the cursor after it (and the spaces that follow), at a separator or the end. */
function readQuoted(cursor: CsvCursor, quote: number): string {
  const { text } = cursor;
  const quoteLine = cursor.line;
  let value = '';
  let k = quote + 1;
  for (;;) {
    const close = text.indexOf('"', k);
    if (close === -1) throw new CsvSyntaxError(`a quoted field opened on line ${quoteLine} is never closed`, quoteLine);
    const chunk = text.slice(k, close);
    value += chunk;
    cursor.line += countLineBreaks(chunk);
    k = close + 1;
    if (text.charCodeAt(k) !== QUOTE) break;
    value += '"';
    k += 1;
  }
  while (k < text.length && (text[k] === ' ' || text[k] === '\t')) k += 1;
  const next = text.charCodeAt(k);
  if (k < text.length && next !== COMMA && next !== LF && next !== CR) {
    throw new CsvSyntaxError(`unexpected text after a closing quote on line ${cursor.line} (a quote inside a quoted field must be doubled)`, cursor.line);
  }
  cursor.i = k;
  return value;
}

/** An unquoted field starting at `start`, trimmed; leaves the cursor at the separator or the end. */
function readPlain(cursor: CsvCursor, start: number): string {
  const { text } = cursor;
  let k = start;
  while (k < text.length) {
    const c = text.charCodeAt(k);
    if (c === COMMA || c === LF || c === CR) break;
    k += 1;
  }
  cursor.i = k;
  return text.slice(start, k).trim();
}

export function contactExists(phoneNumber: string): AppError {
  return new AppError('CONTACT_EXISTS', `A contact with phone number ${phoneNumber} already exists`, [
    { field: 'phoneNumber', message: 'already used by another contact' },
  ]);
}
