/**
 * The media store's routes: GET /messages/:id/media, the file of an incoming media message, and
 * uploads (POST /media, GET and DELETE /media/:id, see src/media/uploads.ts). Files come from the
 * database, so any API process serves them, with their type, name, length and ETag; one byte
 * range per request (206), as browsers' media players and download resumers ask.
 */
import { Readable } from 'node:stream';
import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Database } from '../../platform/database.js';
import { AppError } from '../../platform/errors.js';
import { getStoredMedia, readMedia, type StoredMedia } from '../../media/media-store.js';
import { UploadSchema } from '../../media/upload-record.js';
import { FILE_NAME_PATTERN, MAX_FILE_NAME, UPLOAD_LIMIT, uploadFileName, uploadTooLarge, type UploadService } from '../../media/uploads.js';
import { getMessage } from '../../messaging/message-store.js';
import { FORM_OVERHEAD, readFormFile } from '../multipart.js';
import { DATA_CSP } from '../security-headers.js';
import { auth } from '../auth.js';
import { errorResponses, IdParams, successData, successPage, type RouteApp } from '../schemas.js';
import { BoundedPageQuery } from './contacts.js';
import { MAX_PAGE_SIZE } from '../../directory/contacts.js';

/** The first and last byte asked for, `unsatisfiable`, or undefined to answer the whole file. */
export type ByteRange = { start: number; end: number } | 'unsatisfiable' | undefined;

/**
 * A Range header over a file of `size` bytes. One range only: a list of ranges, another unit or
 * a header that is not a range at all is ignored (the whole file, as RFC 9110 allows); a range
 * that starts past the end, ends before it starts, or an empty suffix is unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange {
  const match = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    return suffix === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const last = match[2] === '' ? size - 1 : Number(match[2]);
  if (start >= size || last < start) return 'unsatisfiable';
  return { start, end: Math.min(last, size - 1) };
}

/** Shown in the browser (image, audio, video players); anything else is a download. SVG can carry script: a download. */
const INLINE = /^(image\/(jpeg|png|gif|webp)|audio\/[\w.+-]+|video\/[\w.+-]+)$/;
const EXTENSIONS: Record<string, string> = { jpeg: 'jpg', 'svg+xml': 'svg', mpeg: 'mp3', quicktime: 'mov', plain: 'txt' };

/** Content-Disposition with the file's name (RFC 6266: an ASCII fallback and the UTF-8 name). */
export function contentDisposition(contentType: string, fileName: string | null, messageId: string): string {
  const subtype = contentType.split('/')[1]?.split(';')[0]?.trim() ?? '';
  const name = fileName ?? `${messageId}${subtype && /^[\w.+-]+$/.test(subtype) ? `.${EXTENSIONS[subtype] ?? subtype}` : ''}`;
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${INLINE.test(contentType) ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

const Binary = Type.Unsafe<Readable | string>({ type: 'string', format: 'binary', description: 'The file' });

export const mediaRoutes: FastifyPluginAsyncTypebox<{ database: Database; uploads: UploadService }> = async (app, { database, uploads }) => {
  incomingMediaRoute(app, database);
  await uploadRoute(app, uploads);
  uploadRoutes(app, database, uploads);
};

/** GET /messages/:id/media: the stored file of an incoming media message. */
function incomingMediaRoute(app: RouteApp, database: Database): void {
  app.get(
    '/messages/:id/media',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['messages'], operationId: 'getMessageMedia',
        summary: 'Download the file of an incoming media message (Range requests answered)',
        description:
          'The bytes Waygate stored when the message arrived, with Content-Type, Content-Disposition (the file name), Content-Length, ' +
          'ETag (the SHA-256, also `media.sha256` on the message) and Accept-Ranges. `Range: bytes=first-last` (one range; ' +
          '`bytes=first-` and `bytes=-suffix` too) answers 206 with Content-Range; a range past the end answers 416 with ' +
          '`Content-Range: bytes */size`. `If-None-Match` with the ETag answers 304. 404 when the message is not one of the ' +
          "account's, has no stored file (outgoing, or its download FAILED) or its file was pruned (EXPIRED, after MEDIA_RETENTION_DAYS).",
        params: IdParams,
        produces: ['application/octet-stream'],
        response: fileResponses,
      },
    },
    async (request, reply) => {
      const { accountId } = auth(request);
      const { id } = request.params;
      const file = await getStoredMedia(database, accountId, id);
      if (!file) throw await notStored(database, accountId, id);
      return sendFile(request, reply, database, file);
    },
  );
}

/** POST /media: a file uploaded to send, in a plugin of its own that reads any body as a stream. */
async function uploadRoute(app: RouteApp, uploads: UploadService): Promise<void> {
  // The upload's body is the file itself, whatever its type: read as a stream, never parsed.
  await app.register(async (plain) => {
    plain.removeAllContentTypeParsers();
    plain.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    scope.post(
      '/media',
      {
        config: { scope: 'messages:send' },
        schema: {
          tags: ['media'], operationId: 'uploadMedia',
          summary: 'Upload a file to send (the body is the file, or a form with one file part)',
          description:
            'The request body is the file\'s bytes, its `Content-Type` the file\'s type (application/octet-stream if absent), and `fileName` ' +
            'the name a DOCUMENT is sent under. A `multipart/form-data` body (an HTML form, `curl -F file=@menu.png`) works too: its one file part ' +
            '(any field name) is the file, with the part\'s type and file name (`fileName` overrides it); text fields are ignored, and a second file ' +
            `or a form that does not end is 400, another multipart type 415. At most ${UPLOAD_LIMIT} bytes (413 PAYLOAD_TOO_LARGE; a declared Content-Length over it, or over it and ${FORM_OVERHEAD} bytes ` +
            'for a form, is refused before the body is read); an empty file is 400. The account\'s uploads together hold at most its plan\'s `maxUploadBytes` ' +
            '(GET /account: `usage.uploadBytes`, `limits.uploadBytes`): a file that does not fit is 403 PLAN_LIMIT, before its body is read when its length ' +
            'is declared. The answer\'s `mediaUrl` is what a send names in `mediaUrl` to send the file; the send checks ' +
            'that the upload is the account\'s and fits its type\'s size cap (IMAGE 5 MB, VIDEO and AUDIO 16 MB, DOCUMENT 100 MB, STICKER 1 MB and WebP). ' +
            'Uploads are kept MEDIA_RETENTION_DAYS (`expiresAt`); one upload can be sent any number of times, in any number of sends and bulk jobs.',
          querystring: Type.Object(
            { fileName: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_FILE_NAME, pattern: FILE_NAME_PATTERN, description: 'The file\'s name, without a path' })) },
            { additionalProperties: false },
          ),
          consumes: ['*/*', 'multipart/form-data'],
          body: Binary,
          response: { 201: successData(UploadSchema), ...errorResponses('VALIDATION_ERROR', 'FORBIDDEN', 'PLAN_LIMIT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE') },
        },
      },
      async (request, reply) => {
        const { accountId } = auth(request);
        const { fileName } = request.query;
        const type = request.headers['content-type'] ?? '';
        const multipart = /^multipart\//i.test(type);
        if (multipart && !/^multipart\/form-data\b/i.test(type)) {
          throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type: ${type}; send the file's bytes as the body, or a multipart/form-data form`, undefined, { connection: 'close' });
        }
        if (!multipart) {
          const declared = Number(request.headers['content-length']);
          const upload = await uploads.create(
            accountId,
            { contentType: fileType(type), fileName, declaredBytes: Number.isFinite(declared) ? declared : undefined },
            request.raw,
          );
          return reply.status(201).send({ success: true as const, data: upload });
        }
        // A form: its file part is the upload, under its own name and type unless ?fileName= says otherwise.
        const form = await readFormFile(request.raw, UPLOAD_LIMIT, uploadTooLarge);
        const upload = await uploads.create(
          accountId,
          { contentType: fileType(form.contentType), fileName: fileName ?? uploadFileName(form.fileName), declaredBytes: undefined },
          form.body,
        );
        return reply.status(201).send({ success: true as const, data: upload });
      },
    );
  });
}

/** The uploads: listed, downloaded and deleted. */
function uploadRoutes(app: RouteApp, database: Database, uploads: UploadService): void {
  app.get(
    '/media',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['media'], operationId: 'listUploads',
        summary: 'List uploaded files',
        description:
          "The account's uploads still stored, newest first, with their `mediaUrl`, size and `expiresAt`: what counts against the plan's `maxUploadBytes` " +
          '(GET /account: `usage.uploadBytes`), and what DELETE /media/{id} can remove to make room.',
        querystring: Type.Object(BoundedPageQuery, { additionalProperties: false }),
        response: { 200: successPage(UploadSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50 } = request.query;
      return { success: true as const, ...(await uploads.list(auth(request).accountId, page, Math.min(limit, MAX_PAGE_SIZE))) };
    },
  );

  app.get(
    '/media/:id',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['media'], operationId: 'getUpload',
        summary: 'Download an uploaded file (Range requests answered)',
        description: 'The bytes of an upload of the account, as GET /messages/{id}/media answers a message\'s file (ETag, Range, 304). 404 when it is not the account\'s, was deleted or was pruned.',
        params: IdParams,
        produces: ['application/octet-stream'],
        response: fileResponses,
      },
    },
    async (request, reply) => {
      return sendFile(request, reply, database, await uploads.file(auth(request).accountId, request.params.id));
    },
  );

  app.delete(
    '/media/:id',
    {
      config: { scope: 'messages:send' },
      schema: {
        tags: ['media'], operationId: 'deleteUpload',
        summary: 'Delete an uploaded file',
        description: 'Sends that named it and were already sent keep what they sent; a message still waiting to be sent ends FAILED (MEDIA_UNREACHABLE) when its turn comes.',
        params: IdParams,
        response: { 200: successData(Type.Object({ id: Type.String(), deleted: Type.Literal(true) })), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => {
      await uploads.delete(auth(request).accountId, request.params.id);
      return { success: true as const, data: { id: request.params.id, deleted: true as const } };
    },
  );
}

const fileResponses = { 200: Binary, 206: Binary, 304: Type.Null({ description: 'Not modified (If-None-Match)' }), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'RANGE_NOT_SATISFIABLE') };

/**
 * A Content-Type header as a file's type: its media type without parameters, lower case;
 * application/octet-stream when there is none, or it is not a media type, or it is the form type
 * curl gives `--data-binary` by default (a file is never form-encoded).
 */
function fileType(header: string | undefined): string {
  const type = header?.split(';')[0]?.trim().toLowerCase();
  return type && type !== 'application/x-www-form-urlencoded' && /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+$/.test(type) ? type : 'application/octet-stream';
}

/** Answers a stored file: its headers, 304 for a matching ETag, one byte range (206) or all of it. */
function sendFile(request: FastifyRequest, reply: FastifyReply, database: Database, file: StoredMedia): FastifyReply {
  const etag = `"${file.sha256}"`;
  reply
    .header('content-type', file.contentType)
    .header('content-disposition', contentDisposition(file.contentType, file.fileName, file.messageId))
    .header('accept-ranges', 'bytes')
    .header('etag', etag)
    .header('cache-control', 'private, max-age=86400')
    // The file is whatever the sender sent: nothing in it may run, even if a browser renders it.
    .header('content-security-policy', `${DATA_CSP}; sandbox`);
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch && ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) return reply.status(304).send(null);
  const ifRange = request.headers['if-range'];
  const range = ifRange && ifRange !== etag ? undefined : parseRange(request.headers.range, file.sizeBytes);
  if (range === 'unsatisfiable') {
    throw new AppError('RANGE_NOT_SATISFIABLE', `The range ${request.headers.range} is outside the file's ${file.sizeBytes} bytes`, undefined, {
      'content-range': `bytes */${file.sizeBytes}`,
    });
  }
  const { start, end } = range ?? { start: 0, end: file.sizeBytes - 1 };
  if (range) reply.status(206).header('content-range', `bytes ${start}-${end}/${file.sizeBytes}`);
  reply.header('content-length', end - start + 1);
  // HEAD (Fastify's, from this route) keeps a stream's Content-Length and drains it: an empty one reads nothing.
  if (request.method === 'HEAD' || end < start) return reply.send(Readable.from([]));
  return reply.send(Readable.from(readMedia(database, file, start, end)));
}

/** Why a message has no file to serve: each case says so, all 404 (another account's message is not found at all). */
async function notStored(database: Database, accountId: string, id: string): Promise<AppError> {
  const message = await getMessage(database, accountId, id);
  if (!message) return new AppError('NOT_FOUND', 'Message not found');
  const media = message.media;
  if (message.direction === 'out' || !media) return new AppError('NOT_FOUND', 'This message has no stored file (only incoming media messages do; an outgoing one was sent from its mediaUrl)');
  if (media.status === 'EXPIRED') return new AppError('NOT_FOUND', 'The file was pruned after MEDIA_RETENTION_DAYS (media.status EXPIRED)');
  if (media.status === 'FAILED') return new AppError('NOT_FOUND', `The file could not be downloaded: ${media.error?.message ?? 'unknown error'} (media.status FAILED)`);
  return new AppError('NOT_FOUND', 'This message has no stored file');
}
