/**
 * POST /contacts/import through the real app: the report (created, skipped, rejected with the
 * file's own line numbers), all-or-nothing writes, header and content-type checks, and the CSV
 * dialects people actually send (quotes, BOM, CRLF, blank lines, extra columns, big files).
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, json, type Tenant, type TestContext, expectError, type FieldError } from './helpers.js';

interface ImportReport {
  totalRows: number;
  created: number;
  skipped: { line: number; phoneNumber: string; reason: string }[];
  rejected: { line: number; errors: FieldError[] }[];
}
interface ContactBody {
  id: string;
  name: string;
  phoneNumber: string;
  createdAt: string;
  updatedAt: string;
}
interface ListBody {
  data: ContactBody[];
  meta: { total: number; page: number; limit: number };
}

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

function upload(tenant: Tenant, payload: string | Buffer, contentType = 'text/csv', prefix = ''): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method: 'POST',
    url: `${prefix}/contacts/import`,
    headers: { ...tenant.headers, 'content-type': contentType },
    payload,
  });
}

async function importOk(tenant: Tenant, csv: string | Buffer, contentType = 'text/csv', prefix = ''): Promise<ImportReport> {
  const response = await upload(tenant, csv, contentType, prefix);
  expect(response.statusCode, response.body).toBe(200);
  const body = json<{ success: boolean; data: ImportReport }>(response);
  expect(body.success).toBe(true);
  expect(Object.keys(body.data).sort()).toEqual(['created', 'rejected', 'skipped', 'totalRows']);
  return body.data;
}

/** All contacts of the tenant, read back through GET /contacts (newest first). */
async function allContacts(tenant: Tenant): Promise<ListBody> {
  const first = json<ListBody>(await ctx.app.inject({ method: 'GET', url: '/contacts?limit=100', headers: tenant.headers }));
  const data = [...first.data];
  const pages = Math.ceil(first.meta.total / 100);
  for (let page = 2; page <= pages; page += 1) {
    const next = json<ListBody>(await ctx.app.inject({ method: 'GET', url: `/contacts?limit=100&page=${page}`, headers: tenant.headers }));
    data.push(...next.data);
  }
  return { data, meta: first.meta };
}

async function createContact(tenant: Tenant, name: string, phoneNumber: string): Promise<ContactBody> {
  const response = await ctx.app.inject({ method: 'POST', url: '/contacts', headers: tenant.headers, payload: { name, phoneNumber } });
  expect(response.statusCode, response.body).toBe(201);
  return json<{ data: ContactBody }>(response).data;
}

describe('POST /contacts/import', () => {
  it('imports valid rows and reports created, skipped and rejected with file line numbers', async () => {
    const tenant = await createTenant(ctx);
    const existing = await createContact(tenant, 'Already Here', '6281111111111');
    const csv = [
      'name,phoneNumber', // 1
      'Alice,+62 812 3456 7890', // 2 created
      'Bob,6281234567891', // 3 created
      'Alice Again,6281234567890', // 4 duplicate of line 2
      'Existing,+62 811 1111 1111', // 5 already in the account
      ',6281234567892', // 6 rejected: empty name
      'Bad Phone,0812345', // 7 rejected: phone
      ',abc', // 8 rejected: both
      'Carol,14155552671', // 9 created
    ].join('\n');
    const report = await importOk(tenant, `${csv}\n`);
    expect(report.totalRows).toBe(8);
    expect(report.created).toBe(3);
    expect(report.skipped).toEqual([
      { line: 4, phoneNumber: '6281234567890', reason: expect.stringContaining('line 2') },
      { line: 5, phoneNumber: '6281111111111', reason: expect.stringContaining('already exists') },
    ]);
    expect(report.rejected.map((r) => r.line)).toEqual([6, 7, 8]);
    expect(report.rejected[0]!.errors.map((e) => e.field)).toEqual(['name']);
    expect(report.rejected[1]!.errors.map((e) => e.field)).toEqual(['phoneNumber']);
    expect(report.rejected[2]!.errors.map((e) => e.field)).toEqual(['name', 'phoneNumber']);
    for (const rejected of report.rejected) for (const error of rejected.errors) expect(error.message.length).toBeGreaterThan(0);
    expect(report.totalRows).toBe(report.created + report.skipped.length + report.rejected.length);

    const listed = await allContacts(tenant);
    expect(listed.meta.total).toBe(4);
    const byPhone = new Map(listed.data.map((c) => [c.phoneNumber, c.name]));
    expect(Object.fromEntries(byPhone)).toEqual({
      '6281234567890': 'Alice',
      '6281234567891': 'Bob',
      '14155552671': 'Carol',
      '6281111111111': 'Already Here',
    });
    // The existing contact was not overwritten.
    const fetched = await ctx.app.inject({ method: 'GET', url: `/contacts/${existing.id}`, headers: tenant.headers });
    expect(json<{ data: ContactBody }>(fetched).data).toEqual(existing);
  });

  it('answers at /v1 identically', async () => {
    const tenant = await createTenant(ctx);
    const report = await importOk(tenant, 'name,phoneNumber\nV One,6281234567890\n', 'text/csv', '/v1');
    expect(report).toEqual({ totalRows: 1, created: 1, skipped: [], rejected: [] });
    expectError(await upload(tenant, '<a/>', 'application/xml', '/v1'), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('importing the same file twice creates nothing the second time', async () => {
    const tenant = await createTenant(ctx);
    const csv = 'name,phoneNumber\nA,6281234567890\nB,6281234567891\n';
    expect((await importOk(tenant, csv)).created).toBe(2);
    const again = await importOk(tenant, csv);
    expect(again.created).toBe(0);
    expect(again.skipped.map((s) => s.line)).toEqual([2, 3]);
    expect((await allContacts(tenant)).meta.total).toBe(2);
  });

  it('creates nothing and says so when every row is invalid', async () => {
    const tenant = await createTenant(ctx);
    const report = await importOk(tenant, 'name,phoneNumber\nX,12\nY,letters\n');
    expect(report).toMatchObject({ totalRows: 2, created: 0, skipped: [] });
    expect(report.rejected.map((r) => r.line)).toEqual([2, 3]);
    expect((await allContacts(tenant)).meta.total).toBe(0);
  });

  it('is all or nothing: a database failure after the first batch leaves no contact behind', async () => {
    const tenant = await createTenant(ctx);
    const suffix = randomBytes(6).toString('hex');
    const marker = `fail-${suffix}`;
    const fn = `waygate_test_fail_${suffix}`;
    // A trigger that fails the insert of one marked row (only this test's marker can match).
    await ctx.database.query(
      `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.name = '${marker}' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`,
    );
    await ctx.database.query(`CREATE TRIGGER ${fn} BEFORE INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
    try {
      const rows = Array.from({ length: 1500 }, (_, i) => `${i === 1400 ? marker : `Row ${i}`},${6281300000000 + i}`);
      const response = await upload(tenant, ['name,phoneNumber', ...rows].join('\n'));
      expectError(response, 500, 'INTERNAL');
      expect(response.body).not.toContain('injected failure');
    } finally {
      await ctx.database.query(`DROP TRIGGER IF EXISTS ${fn} ON contacts`);
      await ctx.database.query(`DROP FUNCTION IF EXISTS ${fn}()`);
    }
    expect((await allContacts(tenant)).meta.total).toBe(0);
    // And the same file without the failure imports completely.
    const report = await importOk(tenant, ['name,phoneNumber', ...Array.from({ length: 1500 }, (_, i) => `Row ${i},${6281300000000 + i}`)].join('\n'));
    expect(report.created).toBe(1500);
    expect((await allContacts(tenant)).meta.total).toBe(1500);
  });

  it('reports consistently when the same file is imported twice at the same time', async () => {
    const tenant = await createTenant(ctx);
    const csv = ['name,phoneNumber', ...Array.from({ length: 300 }, (_, i) => `P ${i},${6281400000000 + i}`)].join('\n');
    const [one, two] = await Promise.all([upload(tenant, csv), upload(tenant, csv)]);
    const reports = [one!, two!].map((r) => {
      expect(r.statusCode, r.body).toBe(200);
      return json<{ data: ImportReport }>(r).data;
    });
    expect(reports[0]!.created + reports[1]!.created).toBe(300);
    for (const report of reports) expect(report.created + report.skipped.length).toBe(300);
    expect((await allContacts(tenant)).meta.total).toBe(300);
  });

  it('accepts a header with no rows', async () => {
    const tenant = await createTenant(ctx);
    expect(await importOk(tenant, 'name,phoneNumber\n')).toEqual({ totalRows: 0, created: 0, skipped: [], rejected: [] });
    expect(await importOk(tenant, 'name,phoneNumber')).toEqual({ totalRows: 0, created: 0, skipped: [], rejected: [] });
  });

  it('keeps its writes to the calling account', async () => {
    const a = await createTenant(ctx);
    const b = await createTenant(ctx);
    await createContact(b, 'B has it', '6281234567890');
    const report = await importOk(a, 'name,phoneNumber\nA has it,6281234567890\n');
    expect(report.created).toBe(1);
    expect((await allContacts(a)).data.map((c) => c.name)).toEqual(['A has it']);
    expect((await allContacts(b)).data.map((c) => c.name)).toEqual(['B has it']);
  });

  describe('CSV dialects', () => {
    it('handles quoted fields with commas, escaped quotes and line breaks, keeping line numbers right', async () => {
      const tenant = await createTenant(ctx);
      const csv = [
        'name,phoneNumber', // 1
        '"Doe, Jane","+62 812 3456 7890"', // 2
        '"The ""Boss""",6281234567891', // 3
        '"Multi', // 4
        'Line",6281234567892', // 5 (same record)
        'After Multi,bad', // 6 rejected
        '"Dup, Jane",6281234567890', // 7 duplicate of line 2
      ].join('\n');
      const report = await importOk(tenant, csv);
      expect(report.totalRows).toBe(5);
      expect(report.created).toBe(3);
      expect(report.rejected.map((r) => r.line)).toEqual([6]);
      expect(report.skipped).toEqual([{ line: 7, phoneNumber: '6281234567890', reason: expect.stringContaining('line 2') }]);
      const names = (await allContacts(tenant)).data.map((c) => c.name).sort();
      // A line break inside a name (a multi-line spreadsheet cell) becomes a space.
      expect(names).toEqual(['Doe, Jane', 'Multi Line', 'The "Boss"']);
    });

    it('accepts a UTF-8 BOM and non-ASCII names', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, Buffer.from('\uFEFFname,phoneNumber\nJosé Müller,6281234567890\n李小龍,6281234567891\n', 'utf8'));
      expect(report).toEqual({ totalRows: 2, created: 2, skipped: [], rejected: [] });
      expect((await allContacts(tenant)).data.map((c) => c.name).sort()).toEqual(['José Müller', '李小龍'].sort());
    });

    it('accepts CRLF line endings with the right line numbers', async () => {
      const tenant = await createTenant(ctx);
      const csv = 'name,phoneNumber\r\nA,6281234567890\r\nB,bad\r\n"C\r\nD",6281234567891\r\nE,6281234567890\r\n';
      const report = await importOk(tenant, csv);
      expect(report.totalRows).toBe(4);
      expect(report.created).toBe(2);
      expect(report.rejected.map((r) => r.line)).toEqual([3]);
      expect(report.skipped.map((s) => s.line)).toEqual([6]);
      expect((await allContacts(tenant)).data.map((c) => c.name).sort()).toEqual(['A', 'C D']);
    });

    it('accepts a file with mixed LF and CRLF line endings', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\nA,6281234567890\r\nB,bad\r\nC,bad\n');
      expect(report.rejected.map((r) => r.line)).toEqual([3, 4]);
      expect(report.created).toBe(1);
    });

    it('accepts old Mac CR line endings', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\rA,6281234567890\rB,bad\r');
      expect(report.created).toBe(1);
      expect(report.rejected.map((r) => r.line)).toEqual([3]);
    });

    it('skips blank lines without counting them as rows, and keeps the file line numbers', async () => {
      const tenant = await createTenant(ctx);
      const csv = 'name,phoneNumber\n\nA,6281234567890\n   \n\nB,bad\n\n';
      const report = await importOk(tenant, csv);
      expect(report.totalRows).toBe(2);
      expect(report.created).toBe(1);
      expect(report.rejected.map((r) => r.line)).toEqual([6]);
    });

    it('trims spaces around fields and header names, ignores extra columns and any column order', async () => {
      const tenant = await createTenant(ctx);
      const csv = ' email, phoneNumber, name \nx@example.com,  +62 812 3456 7890 ,  Spaced Name  \n';
      const report = await importOk(tenant, csv);
      expect(report).toEqual({ totalRows: 1, created: 1, skipped: [], rejected: [] });
      expect((await allContacts(tenant)).data.map((c) => [c.name, c.phoneNumber])).toEqual([['Spaced Name', '6281234567890']]);
    });

    it('rejects a row that is missing the phone column', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\nOnly Name\nGood,6281234567890\n');
      expect(report.created).toBe(1);
      expect(report.rejected).toEqual([{ line: 2, errors: [{ field: 'phoneNumber', message: expect.any(String) }] }]);
    });

    it('reports a multi-line record that is rejected at the line where it starts', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\n"Two\nLines","bad\nphone"\nOK,6281234567890\n');
      expect(report.rejected.map((r) => r.line)).toEqual([2]);
      expect(report.created).toBe(1);
    });

    it('skips rows made only of separators (spreadsheet exports) and quoted empty rows', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\nA,6281234567890\n,\n, \n"",""\nB,bad\n');
      expect(report.totalRows).toBe(2);
      expect(report.rejected.map((r) => r.line)).toEqual([6]);
    });

    it('accepts header names in other cases and with spaces or underscores, and quoted headers', async () => {
      for (const header of ['Name,Phone Number', 'NAME,phone_number', '"name","phoneNumber"', 'name,phone-number']) {
        const tenant = await createTenant(ctx);
        const report = await importOk(tenant, `${header}\nA,6281234567890\n`);
        expect(report, header).toEqual({ totalRows: 1, created: 1, skipped: [], rejected: [] });
      }
    });

    it('rejects names with control characters as rows, not as a server error', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\nnul\u0000name,6281234567890\nGood,6281234567891\n');
      expect(report.rejected).toEqual([{ line: 2, errors: [{ field: 'name', message: 'must not contain control characters' }] }]);
      expect(report.created).toBe(1);
    });

    it('accepts text/plain as well', async () => {
      const tenant = await createTenant(ctx);
      expect((await importOk(tenant, 'name,phoneNumber\nA,6281234567890\n', 'text/plain')).created).toBe(1);
    });

    it('rejects a name over 200 characters', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, `name,phoneNumber\n${'x'.repeat(201)},6281234567890\n`);
      expect(report.rejected).toEqual([{ line: 2, errors: [{ field: 'name', message: expect.any(String) }] }]);
    });

    it('accepts text/csv with a charset parameter', async () => {
      const tenant = await createTenant(ctx);
      const report = await importOk(tenant, 'name,phoneNumber\nA,6281234567890\n', 'text/csv; charset=utf-8');
      expect(report.created).toBe(1);
    });

    it('imports a 5,000-row file completely and exactly', async () => {
      const tenant = await createTenant(ctx);
      const rows = Array.from({ length: 5000 }, (_, i) => `"Person ${i}, Jr.",+62 812 ${String(10_000_000 + i)}`);
      // One duplicate and one bad row at the end.
      rows.push('Dup,+62 812 10000000', 'Bad,123');
      const report = await importOk(tenant, ['name,phoneNumber', ...rows].join('\r\n'));
      expect(report.totalRows).toBe(5002);
      expect(report.created).toBe(5000);
      expect(report.skipped).toEqual([{ line: 5002, phoneNumber: '6281210000000', reason: expect.stringContaining('line 2') }]);
      expect(report.rejected.map((r) => r.line)).toEqual([5003]);

      const first = json<ListBody>(await ctx.app.inject({ method: 'GET', url: '/contacts?limit=100', headers: tenant.headers }));
      expect(first.meta.total).toBe(5000);
      const last = json<ListBody>(await ctx.app.inject({ method: 'GET', url: '/contacts?limit=100&page=50', headers: tenant.headers }));
      expect(last.data).toHaveLength(100);
      const search = json<ListBody>(await ctx.app.inject({ method: 'GET', url: '/contacts?search=person%204999', headers: tenant.headers }));
      expect(search.data.map((c) => [c.name, c.phoneNumber])).toEqual([['Person 4999, Jr.', '6281210004999']]);
      expect(search.meta.total).toBe(1);
    });
  });

  describe('refusals', () => {
    it('answers 400 when the header lacks a column, and imports nothing', async () => {
      const tenant = await createTenant(ctx);
      for (const csv of ['name,phone\nA,6281234567890\n', 'phoneNumber\n6281234567890\n', 'Alice,6281234567890\nBob,6281234567891\n']) {
        const body = expectError(await upload(tenant, csv), 400, 'VALIDATION_ERROR');
        expect(body.error.message).toMatch(/name.*phoneNumber|phoneNumber/);
        expect(Array.isArray(body.error.details)).toBe(true);
      }
      expect((await allContacts(tenant)).meta.total).toBe(0);
    });

    it('answers 400 for an empty or blank body', async () => {
      const tenant = await createTenant(ctx);
      for (const csv of ['', '   ', '\n\n', '\uFEFF']) {
        const body = expectError(await upload(tenant, csv), 400, 'VALIDATION_ERROR');
        expect(body.error.details?.length).toBeGreaterThan(0);
      }
      const noBody = await ctx.app.inject({ method: 'POST', url: '/contacts/import', headers: { ...tenant.headers, 'content-type': 'text/csv' } });
      expectError(noBody, 400, 'VALIDATION_ERROR');
    });

    it('answers 400 for a CSV that cannot be parsed (unterminated quote), and imports nothing', async () => {
      const tenant = await createTenant(ctx);
      const body = expectError(await upload(tenant, 'name,phoneNumber\nA,6281234567890\n"Unclosed,6281234567891\n'), 400, 'VALIDATION_ERROR');
      expect(body.error.message).toMatch(/line 3/);
      expect((await allContacts(tenant)).meta.total).toBe(0);
    });

    it('answers 400 for text after a closing quote', async () => {
      const tenant = await createTenant(ctx);
      const body = expectError(await upload(tenant, 'name,phoneNumber\n"A"x,6281234567890\n'), 400, 'VALIDATION_ERROR');
      expect(body.error.message).toMatch(/line 2/);
    });

    it('answers 415 UNSUPPORTED_MEDIA_TYPE for other content types', async () => {
      const tenant = await createTenant(ctx);
      expectError(await upload(tenant, '<contacts/>', 'application/xml'), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectError(await upload(tenant, 'name,phoneNumber\nA,6281234567890\n', 'application/octet-stream'), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectError(await upload(tenant, JSON.stringify('name,phoneNumber\nA,6281234567890\n'), 'application/json'), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect((await allContacts(tenant)).meta.total).toBe(0);
    });

    it('answers 413 PAYLOAD_TOO_LARGE above 5 MB', async () => {
      const tenant = await createTenant(ctx);
      const big = `name,phoneNumber\n${'x'.repeat(5 * 1024 * 1024)},6281234567890\n`;
      expectError(await upload(tenant, big), 413, 'PAYLOAD_TOO_LARGE');
      expect((await allContacts(tenant)).meta.total).toBe(0);
    });

    it('answers 401 without a token', async () => {
      const response = await ctx.app.inject({
        method: 'POST',
        url: '/contacts/import',
        headers: { 'content-type': 'text/csv' },
        payload: 'name,phoneNumber\nA,6281234567890\n',
      });
      expectError(response, 401, 'UNAUTHORIZED');
    });
  });
});
