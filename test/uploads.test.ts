/**
 * Uploads (POST /media, GET and DELETE /media/:id) and sending them by their mediaUrl, through
 * the real app and a real worker on the sandbox network: the bytes round-trip, a direct send and
 * a bulk job send the uploaded file, the type's size cap and another account's upload are
 * refused at acceptance, a deleted upload fails the messages still waiting for it, the body
 * limit is enforced before the body is read, and an upload cut off leaves nothing behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadJson } from '../src/media/upload-record.js';
import { FILE_NAME_PATTERN, MAX_FILE_NAME, UPLOAD_LIMIT, uploadFileName } from '../src/media/uploads.js';
import { FORM_OVERHEAD, readFormFile } from '../src/http/multipart.js';
import { IS_UPLOAD } from '../src/media/media-store.js';
import { createTenant, type Tenant, type TestContext } from './helpers.js';
import {
  createMessagingApp,
  expectError,
  expectFieldError,
  expectOk,
  linkDevice,
  phone,
  phones,
  sandboxMessages,
  sendBulk,
  sendDirect,
  send,
  waitFor,
  waitForJob,
  waitForStatus,
  type DataBody,
} from './messaging-helpers.js';

let ctx: TestContext;
let tenant: Tenant;
beforeAll(async () => {
  ctx = await createMessagingApp();
  tenant = await createTenant(ctx);
  await linkDevice(ctx, tenant);
});
afterAll(async () => ctx.close());

/** A PNG's first bytes, then `size` bytes in all. */
function png(size: number): Buffer {
  const file = randomBytes(size);
  Buffer.from('89504e470d0a1a0a', 'hex').copy(file);
  return file;
}

let port: number | undefined;
/** The app on a loopback port (for requests inject cannot make: a body cut off, or never sent). */
async function listening(): Promise<number> {
  port ??= Number(new URL(await ctx.app.listen({ port: 0, host: '127.0.0.1' })).port);
  return port;
}

const chunksOfUnfinished = async (): Promise<number> =>
  Number((await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM media_chunks c JOIN media m USING (message_id) WHERE m.stored_at IS NULL'))[0]!.n);

function upload(owner: Tenant, body: Buffer | string, contentType: string, query = '') {
  return ctx.app.inject({ method: 'POST', url: `/media${query}`, headers: { ...owner.headers, 'content-type': contentType }, payload: body });
}

async function uploaded(owner: Tenant, body: Buffer, contentType = 'image/png', fileName = 'photo.png'): Promise<UploadJson> {
  return expectOk<DataBody<UploadJson>>(await upload(owner, body, contentType, `?fileName=${encodeURIComponent(fileName)}`), 201).data;
}

describe('uploading a file', () => {
  it('stores the bytes as sent and answers the record; GET serves them, with ranges', async () => {
    const file = png(70_000);
    const record = await uploaded(tenant, file, 'image/png; charset=binary', 'Ünïcode photo.png');
    expect(record).toMatchObject({ contentType: 'image/png', fileName: 'Ünïcode photo.png', sizeBytes: file.length, sha256: createHash('sha256').update(file).digest('hex') });
    expect(record.id).toMatch(/^upl_[0-9a-z]{26}$/);
    expect(record.mediaUrl).toBe(`${ctx.config.publicUrl}/media/${record.id}`);
    expect(Date.parse(record.expiresAt) - Date.parse(record.createdAt)).toBe(ctx.config.mediaRetentionDays * 86_400_000);

    const got = await ctx.app.inject({ method: 'GET', url: `/media/${record.id}`, headers: tenant.headers });
    expect(got.statusCode).toBe(200);
    expect(got.headers['content-type']).toBe('image/png');
    expect(got.headers.etag).toBe(`"${record.sha256}"`);
    expect(got.rawPayload.equals(file)).toBe(true);
    const part = await ctx.app.inject({ method: 'GET', url: `/v1/media/${record.id}`, headers: { ...tenant.headers, range: 'bytes=100-199' } });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload.equals(file.subarray(100, 200))).toBe(true);
  });

  it('takes any type of file, and application/octet-stream when none is given', async () => {
    const json = expectOk<DataBody<UploadJson>>(await upload(tenant, '{"a":1}', 'application/json'), 201).data;
    expect(json).toMatchObject({ contentType: 'application/json', sizeBytes: 7, fileName: null });
    const untyped = expectOk<DataBody<UploadJson>>(
      await ctx.app.inject({ method: 'POST', url: '/media', headers: tenant.headers, payload: Buffer.from('raw') }),
      201,
    ).data;
    expect(untyped.contentType).toBe('application/octet-stream');
    const curlDefault = expectOk<DataBody<UploadJson>>(await upload(tenant, png(10), 'application/x-www-form-urlencoded'), 201).data;
    expect(curlDefault.contentType).toBe('application/octet-stream');
    expectError(await upload(tenant, '--x\r\ncontent-type: text/plain\r\n\r\nabc\r\n--x--', 'multipart/mixed; boundary=x'), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses an empty file, a path as its name, and a token without messages:send', async () => {
    expectError(await upload(tenant, Buffer.alloc(0), 'image/png'), 400, 'VALIDATION_ERROR');
    expectError(await upload(tenant, png(100), 'image/png', '?fileName=..%2Fetc%2Fpasswd'), 400, 'VALIDATION_ERROR');
    const reader = await createTenant(ctx, { scopes: ['messages:read'] });
    expectError(await upload(reader, png(100), 'image/png'), 403, 'FORBIDDEN');
  });

  it('refuses a declared length over the limit before reading the body (413)', async () => {
    const port = await listening();
    let request: http.ClientRequest | undefined;
    const answer = await new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      request = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/media', headers: { ...tenant.headers, 'content-type': 'video/mp4', 'content-length': String(UPLOAD_LIMIT + 1) } },
        (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode!, connection: response.headers.connection, body }));
        },
      );
      request.on('error', reject);
      // A first piece only: the answer must come without the rest.
      request.write(Buffer.alloc(1024));
    }).finally(() => request?.destroy());
    expect(answer.status).toBe(413);
    // Nothing more of the body is read or waited for.
    expect(answer.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('leaves nothing behind when the client goes away halfway', async () => {
    const port = await listening();
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/media?fileName=cut.bin', headers: { ...tenant.headers, 'content-type': 'application/octet-stream', 'content-length': String(2_000_000) } });
    request.on('error', () => undefined);
    request.write(Buffer.alloc(700_000, 7));
    // Two chunks of 256 KB are in the store before the client goes.
    await waitFor(async () => (await chunksOfUnfinished()) >= 2, 10_000, 'the first chunks stored');
    request.destroy();
    await waitFor(async () => (await ctx.database.query('SELECT 1 FROM media WHERE stored_at IS NULL')).length === 0, 10_000, 'the unfinished upload discarded');
    expect(await chunksOfUnfinished()).toBe(0);
  });

  it('is another account’s to nobody: GET and DELETE answer 404', async () => {
    const record = await uploaded(tenant, png(500));
    const other = await createTenant(ctx);
    expectError(await ctx.app.inject({ method: 'GET', url: `/media/${record.id}`, headers: other.headers }), 404, 'NOT_FOUND');
    expectError(await ctx.app.inject({ method: 'DELETE', url: `/media/${record.id}`, headers: other.headers }), 404, 'NOT_FOUND');
    expectError(await ctx.app.inject({ method: 'GET', url: '/media/upl_00000000000000000000000000', headers: tenant.headers }), 404, 'NOT_FOUND');
  });
});

/** POSTs `form` to /media over a real connection, as a browser's fetch or `curl -F` does. */
async function postForm(owner: Tenant, form: FormData, query = ''): Promise<{ status: number; body: { success: boolean; data?: UploadJson; error?: { code: string; message: string } } }> {
  const response = await fetch(`http://127.0.0.1:${await listening()}/media${query}`, { method: 'POST', headers: owner.headers, body: form });
  return { status: response.status, body: (await response.json()) as never };
}

/** A hand-written multipart body, for forms fetch will not make (cut off, two files). */
function rawForm(parts: string[], end = '--b--\r\n'): string {
  return parts.map((part) => `--b\r\n${part}\r\n`).join('') + end;
}

describe('uploading a file as a form (multipart/form-data)', () => {
  it('stores the form’s file part under its own name and type; text fields are ignored', async () => {
    const file = png(300_000);
    const form = new FormData();
    form.append('caption', 'ignored');
    form.append('file', new Blob([file], { type: 'image/png' }), 'Ménu card.png');
    const { status, body } = await postForm(tenant, form);
    expect(status).toBe(201);
    expect(body.data).toMatchObject({ contentType: 'image/png', fileName: 'Ménu card.png', sizeBytes: file.length, sha256: createHash('sha256').update(file).digest('hex') });
    const got = await ctx.app.inject({ method: 'GET', url: `/media/${body.data!.id}`, headers: tenant.headers });
    expect(got.rawPayload.equals(file)).toBe(true);
  });

  it('takes ?fileName= over the part’s name, drops a path from the part’s name, and sends the file', async () => {
    const named = new FormData();
    named.append('document', new Blob(['%PDF-1.4 form'], { type: 'application/pdf' }), 'scan0001.pdf');
    const renamed = await postForm(tenant, named, '?fileName=Invoice%207.pdf');
    expect(renamed.body.data).toMatchObject({ fileName: 'Invoice 7.pdf', contentType: 'application/pdf', sizeBytes: 13 });
    const to = phone();
    expect((await sendDirect(ctx, tenant, { type: 'DOCUMENT', content: '', mediaUrl: renamed.body.data!.mediaUrl, to })).message.status).toBe('SENT');
    expect((await sandboxMessages(ctx, tenant, { to })).data[0]).toMatchObject({ fileName: 'Invoice 7.pdf', mediaType: 'application/pdf', mediaBytes: 13 });

    const pathed = await upload(tenant, rawForm(['content-disposition: form-data; name="file"; filename="C:\\Users\\me\\menu.pdf"\r\ncontent-type: application/pdf\r\n\r\n%PDF']), 'multipart/form-data; boundary=b');
    expect(expectOk<DataBody<UploadJson>>(pathed, 201).data.fileName).toBe('menu.pdf');
  });

  it('refuses a form with no file, two files, an empty file, a cut-off body or no boundary, and keeps nothing of it', async () => {
    const before = Number((await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM media'))[0]!.n);
    const fieldsOnly = new FormData();
    fieldsOnly.append('file', 'not a file part');
    const none = await postForm(tenant, fieldsOnly);
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(none.body.error!.message).toContain('no file');

    const two = new FormData();
    two.append('a', new Blob([png(1000)], { type: 'image/png' }), 'a.png');
    two.append('b', new Blob([png(1000)], { type: 'image/png' }), 'b.png');
    const twice = await postForm(tenant, two);
    expect(twice.status).toBe(400);
    expect(twice.body.error!.message).toContain('more than one file');

    const empty = new FormData();
    empty.append('file', new Blob([], { type: 'image/png' }), 'empty.png');
    expect((await postForm(tenant, empty)).status).toBe(400);

    const part = 'content-disposition: form-data; name="file"; filename="cut.png"\r\ncontent-type: image/png\r\n\r\n' + 'x'.repeat(5000);
    expectError(await upload(tenant, `--b\r\n${part}`, 'multipart/form-data; boundary=b'), 400, 'VALIDATION_ERROR');
    expectError(await upload(tenant, rawForm([part]), 'multipart/form-data'), 400, 'VALIDATION_ERROR');
    expect(Number((await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM media'))[0]!.n)).toBe(before);
  });

  it('leaves nothing behind when the client goes away halfway through the form', async () => {
    const port = await listening();
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/media',
      headers: { ...tenant.headers, 'content-type': 'multipart/form-data; boundary=b', 'content-length': String(3_000_000) },
    });
    request.on('error', () => undefined);
    request.write('--b\r\ncontent-disposition: form-data; name="file"; filename="cut.bin"\r\ncontent-type: application/octet-stream\r\n\r\n');
    request.write(Buffer.alloc(700_000, 7));
    await waitFor(async () => (await chunksOfUnfinished()) >= 2, 10_000, 'the first chunks stored');
    request.destroy();
    await waitFor(async () => (await ctx.database.query('SELECT 1 FROM media WHERE stored_at IS NULL')).length === 0, 10_000, 'the unfinished upload discarded');
    expect(await chunksOfUnfinished()).toBe(0);
  });

  it('refuses a form declared over the limit and its overhead before reading it (413)', async () => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/media',
      headers: { ...tenant.headers, 'content-type': 'multipart/form-data; boundary=b', 'content-length': String(UPLOAD_LIMIT + FORM_OVERHEAD + 1) },
      payload: Readable.from([Buffer.from('--b\r\n')]),
    });
    expectError(response, 413, 'PAYLOAD_TOO_LARGE');
    expect(response.headers.connection).toBe('close');
  });
});

describe('a form part’s file name as an upload’s (uploadFileName)', () => {
  it('keeps what follows the last slash, drops control characters, cuts to MAX_FILE_NAME, and matches the query’s pattern', () => {
    expect(uploadFileName('C:\\scans/a\u0000b\\c\u0007d.pdf')).toBe('cd.pdf');
    expect(uploadFileName('dir/')).toBeUndefined();
    expect(uploadFileName(' \u0001 ')).toBeUndefined();
    const long = uploadFileName(`${'é'.repeat(300)}.pdf`)!;
    expect([...long]).toHaveLength(MAX_FILE_NAME);
    for (const name of ['cd.pdf', long, 'Ménu card.png']) expect(new RegExp(FILE_NAME_PATTERN).test(name)).toBe(true);
  });
});

describe('reading a form (readFormFile)', () => {
  /** A request of `body`, as node:http hands it over. */
  function request(body: string[], type = 'multipart/form-data; boundary=b'): IncomingMessage {
    return Object.assign(Readable.from(body.map((piece) => Buffer.from(piece))), { headers: { 'content-type': type } }) as unknown as IncomingMessage;
  }
  const tooLarge = (): Error => new Error('too large');
  const drain = async (file: AsyncIterable<Uint8Array>): Promise<string> => {
    let text = '';
    for await (const chunk of file) text += Buffer.from(chunk).toString();
    return text;
  };

  it('hands over the file part, then ends once the form ends', async () => {
    const file = await readFormFile(request([rawForm(['content-disposition: form-data; name="f"; filename="a.txt"\r\ncontent-type: text/csv\r\n\r\nname,phone'])]), 100, tooLarge);
    expect(file).toMatchObject({ fileName: 'a.txt', contentType: 'text/csv' });
    expect(await drain(file.body)).toBe('name,phone');
  });

  it('stops a body over the file limit and the form overhead, before and after the file part', async () => {
    const padding = 'p'.repeat(FORM_OVERHEAD + 200);
    await expect(readFormFile(request([`${padding}\r\n`, rawForm(['content-disposition: form-data; name="f"; filename="a"\r\n\r\nx'])]), 100, tooLarge)).rejects.toThrow('too large');
    const file = await readFormFile(request([rawForm(['content-disposition: form-data; name="f"; filename="a"\r\n\r\nx', `content-disposition: form-data; name="t"\r\n\r\n${'t'.repeat(60_000)}`]).slice(0, 200), 'z'.repeat(FORM_OVERHEAD + 200)]), 100, tooLarge);
    await expect(drain(file.body)).rejects.toThrow('too large');
  });

  it('refuses a second file even after the first was read', async () => {
    const file = await readFormFile(
      request([rawForm(['content-disposition: form-data; name="a"; filename="a"\r\n\r\none', 'content-disposition: form-data; name="b"; filename="b"\r\n\r\ntwo'])]),
      100,
      tooLarge,
    );
    await expect(drain(file.body)).rejects.toThrow('more than one file');
  });
});

describe('listing uploads (GET /media)', () => {
  it('lists the account’s uploads newest first, pages them, and leaves out incoming media and other accounts’ files', async () => {
    const owner = await createTenant(ctx);
    const made: UploadJson[] = [];
    for (let n = 0; n < 3; n++) made.push(await uploaded(owner, png(100 + n), 'image/png', `p${n}.png`));
    await uploaded(await createTenant(ctx), png(50));
    // An incoming message's file of the same account is in the media store too, not an upload.
    await ctx.database.query(
      `INSERT INTO media (message_id, account_id, content_type, chunk_size, size_bytes, sha256, stored_at) VALUES ('msg_incoming_${randomBytes(4).toString('hex')}', $1, 'image/jpeg', 262144, 10, 'x', now())`,
      [owner.accountId],
    );
    type Listed = { data: UploadJson[]; meta: { total: number; page: number; limit: number } };
    const list = async (query = '') => expectOk<Listed>(await ctx.app.inject({ method: 'GET', url: `/media${query}`, headers: owner.headers }));
    const all = await list();
    expect(all.meta).toEqual({ total: 3, page: 1, limit: 50 });
    expect(all.data.map((upload) => upload.id)).toEqual(made.map((upload) => upload.id).reverse());
    expect(all.data[0]).toEqual(made[2]);
    const second = await list('?limit=2&page=2');
    expect(second.data.map((upload) => upload.id)).toEqual([made[0]!.id]);
    expect(second.meta).toEqual({ total: 3, page: 2, limit: 2 });
    expectError(await ctx.app.inject({ method: 'GET', url: '/media', headers: (await createTenant(ctx, { scopes: ['messages:send'] })).headers }), 403, 'FORBIDDEN');
  });

  it('reads an account’s uploads through media_uploads_idx, whose predicate the statements match', async () => {
    const plan = await ctx.database.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      await tx.query('SET LOCAL enable_bitmapscan = off');
      return tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT coalesce(sum(size_bytes), 0) FROM media WHERE account_id = 'acc_x' AND ${IS_UPLOAD}`);
    });
    expect(plan.map((row) => row['QUERY PLAN']).join('\n')).toContain('media_uploads_idx');
  });
});

describe('the plan’s room for uploads (maxUploadBytes)', () => {
  let small: Tenant;
  beforeAll(async () => {
    const plan = `tiny_${randomBytes(4).toString('hex')}`;
    await ctx.database.query(`INSERT INTO plans (id, name, message_quota, period, max_upload_bytes) VALUES ($1, 'Tiny', NULL, 'month', 10000)`, [plan]);
    small = await createTenant(ctx, { plan });
  });
  const account = async (owner: Tenant) =>
    expectOk<DataBody<{ plan: { maxUploadBytes: number | null }; usage: { uploadBytes: number }; limits: { uploadBytes: number | null } }>>(
      await ctx.app.inject({ method: 'GET', url: '/account', headers: owner.headers }),
    ).data;

  it('GET /account shows the bytes held and the limit; the seeded plans have theirs', async () => {
    expect(await account(small)).toMatchObject({ plan: { maxUploadBytes: 10000 }, usage: { uploadBytes: 0 }, limits: { uploadBytes: 10000 } });
    expect((await account(await createTenant(ctx, { plan: 'free' }))).limits.uploadBytes).toBe(100 * 1024 * 1024);
    expect((await account(await createTenant(ctx, { plan: 'pro' }))).limits.uploadBytes).toBe(1024 * 1024 * 1024);
    expect((await account(tenant)).limits.uploadBytes).toBeNull();
  });

  it('takes files while they fit, refuses the one that does not (403 PLAN_LIMIT), and has room again after a delete', async () => {
    const first = await uploaded(small, png(6000));
    expect((await account(small)).usage.uploadBytes).toBe(6000);
    // Declared too big for the room left: refused before the body is read.
    const declared = await upload(small, png(5000), 'image/png');
    expectError(declared, 403, 'PLAN_LIMIT');
    expect(declared.json().error.details).toEqual({ limit: 10000, used: 6000 });
    // Not declared (a form): the read stops at the room left.
    const form = new FormData();
    form.append('file', new Blob([png(5000)], { type: 'image/png' }), 'big.png');
    const refused = await postForm(small, form);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'PLAN_LIMIT' });
    await uploaded(small, png(4000));
    expect((await account(small)).usage.uploadBytes).toBe(10000);
    expectError(await upload(small, png(1), 'image/png'), 403, 'PLAN_LIMIT');
    expectOk(await ctx.app.inject({ method: 'DELETE', url: `/media/${first.id}`, headers: small.headers }));
    await uploaded(small, png(6000));
    expect(Number((await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM media WHERE account_id = $1 AND stored_at IS NULL', [small.accountId]))[0]!.n)).toBe(0);
  });

  it('lets concurrent uploads together hold no more than the plan', async () => {
    const other = await createTenant(ctx, { plan: (await ctx.database.query<{ plan_id: string }>('SELECT plan_id FROM accounts WHERE id = $1', [small.accountId]))[0]!.plan_id });
    const answers = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const form = new FormData();
        form.append('file', new Blob([png(4000)], { type: 'image/png' }), 'part.png');
        return (await postForm(other, form)).status;
      }),
    );
    expect(answers.filter((status) => status === 201)).toHaveLength(2);
    expect(answers.filter((status) => status === 403)).toHaveLength(2);
    expect((await account(other)).usage.uploadBytes).toBe(8000);
  });
});

describe('sending an upload', () => {
  it('a direct send of an IMAGE naming the upload sends its bytes', async () => {
    const file = png(12_345);
    const record = await uploaded(tenant, file);
    const to = phone();
    const body = await sendDirect(ctx, tenant, { type: 'IMAGE', content: 'from the computer', mediaUrl: record.mediaUrl, to });
    expect(body.message).toMatchObject({ type: 'IMAGE', mediaUrl: record.mediaUrl, status: 'SENT' });
    const [received] = (await sandboxMessages(ctx, tenant, { to })).data;
    expect(received).toMatchObject({ type: 'IMAGE', mediaBytes: file.length, mediaType: 'image/png', fileName: 'photo.png' });
  });

  it('a DOCUMENT goes under the upload’s file name, whatever host the URL names', async () => {
    const record = await uploaded(tenant, Buffer.from('%PDF-1.4 a small document'), 'application/pdf', 'Invoice 42.pdf');
    const to = phone();
    const elsewhere = `https://waygate.example.org/v1/media/${record.id}`;
    const body = await sendDirect(ctx, tenant, { type: 'DOCUMENT', content: 'your invoice', mediaUrl: elsewhere, to });
    expect(body.message.status).toBe('SENT');
    const [received] = (await sandboxMessages(ctx, tenant, { to })).data;
    expect(received).toMatchObject({ mediaBytes: record.sizeBytes, mediaType: 'application/pdf', fileName: 'Invoice 42.pdf' });
  });

  it('a bulk job sends one upload to every recipient', async () => {
    const record = await uploaded(tenant, png(4_000));
    const recipients = phones(25);
    const job = await sendBulk(ctx, tenant, { type: 'IMAGE', content: 'to all', mediaUrl: record.mediaUrl, recipients });
    const done = await waitForJob(ctx, tenant, job.jobId, (j) => j.status === 'COMPLETED', 'COMPLETED');
    expect(done).toMatchObject({ sentCount: 25, failedCount: 0 });
    for (const to of recipients.slice(0, 3)) expect((await sandboxMessages(ctx, tenant, { to })).data[0]).toMatchObject({ mediaBytes: 4_000 });
  });

  it('is refused at acceptance when the account has no such upload, or it is over the type’s cap', async () => {
    const other = await createTenant(ctx);
    const theirs = await uploaded(other, png(300));
    const refused = expectFieldError(await send(ctx, tenant, { type: 'IMAGE', content: '', mediaUrl: theirs.mediaUrl, to: phone() }), 'mediaUrl');
    expect(refused.message).toContain(theirs.id);
    expectFieldError(await send(ctx, tenant, { type: 'IMAGE', content: '', mediaUrl: `${ctx.config.publicUrl}/media/upl_00000000000000000000000000`, to: phone() }), 'mediaUrl');
    const big = await uploaded(tenant, png(1024 * 1024 + 1), 'image/webp', 'big.webp');
    const oversize = expectFieldError(await send(ctx, tenant, { type: 'STICKER', mediaUrl: big.mediaUrl, to: phone() }), 'mediaUrl');
    expect(oversize.message).toContain('STICKER allows 1048576');
  });

  it('a message still waiting when its upload is deleted fails with MEDIA_UNREACHABLE', async () => {
    const record = await uploaded(tenant, png(2_000));
    const scheduled = expectOk<{ message: { id: string; status: string } }>(
      await send(ctx, tenant, { type: 'IMAGE', content: '', mediaUrl: record.mediaUrl, to: phone(), scheduledAt: new Date(Date.now() + 1_500).toISOString() }),
      202,
    );
    expect(scheduled.message.status).toBe('SCHEDULED');
    expect(expectOk<DataBody<{ id: string; deleted: boolean }>>(await ctx.app.inject({ method: 'DELETE', url: `/media/${record.id}`, headers: tenant.headers })).data).toEqual({
      id: record.id,
      deleted: true,
    });
    const failed = await waitForStatus(ctx, tenant, scheduled.message.id, 'FAILED');
    expect(failed.error).toMatchObject({ code: 'MEDIA_UNREACHABLE' });
    expectError(await ctx.app.inject({ method: 'GET', url: `/media/${record.id}`, headers: tenant.headers }), 404, 'NOT_FOUND');
  });
});
