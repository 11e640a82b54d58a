/**
 * Uploads: a file sent from the computer (POST /media), kept in the media store under an id of
 * its own (`upl_…`) for MEDIA_RETENTION_DAYS, and sent by naming its `mediaUrl` in a send, like
 * any media URL. That URL is Waygate's own (`PUBLIC_URL/media/upl_…`, which also serves the
 * file); a send recognises it by its path whatever its host (so a changed PUBLIC_URL or a
 * `/v1` prefix keeps working), checks at acceptance that the account has that upload and that it
 * fits the type's size cap, and the worker reads it from the store instead of over HTTP.
 */
import type { Database, Queryable } from '../platform/database.js';
import { accountPlan, lockAccountPlan } from '../directory/account-store.js';
import { AppError, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { withoutControlCharacters } from '../platform/text.js';
import type { MediaType } from '../network/network.js';
import { fetchMedia, MEDIA_LIMITS, readMediaBody, type MediaResult } from '../outbound/media.js';
import { UPLOAD_LIMIT } from '../outbound/media-limits.js';
import type { GuardedHttp } from '../outbound/ssrf.js';
import type { Upload } from './upload-record.js';
import { isUploadId, uploadIdOf, uploadPath } from './upload-url.js';
import { deleteStoredMedia, discardMedia, getStoredMedia, listUploads, MediaTooLargeError, publishMedia, readMedia, uploadBytesHeld, writeMedia, type StoredMedia } from './media-store.js';

export { UPLOAD_LIMIT };
/** An upload's file name: what a file system allows, at most this long. */
export const MAX_FILE_NAME = 255;
/** An upload's file name has no path and no control characters (the `fileName` query's pattern). */
export const FILE_NAME_PATTERN = '^[^/\\\\\\x00-\\x1f]+$';

/**
 * A file name a client sent with a file (a form part's) as an upload's: what follows its last
 * slash or backslash, without control characters, cut to MAX_FILE_NAME; undefined if nothing is
 * left. So it always matches FILE_NAME_PATTERN.
 */
export function uploadFileName(sent: string): string | undefined {
  const name = [...withoutControlCharacters(sent.split(/[/\\]/).pop() ?? '')].slice(0, MAX_FILE_NAME).join('').trim();
  return name === '' ? undefined : name;
}

export interface NewUpload {
  contentType: string;
  fileName: string | undefined;
  /** The declared length, if the request has one: over UPLOAD_LIMIT, refused before a byte is read. */
  declaredBytes: number | undefined;
}

export class UploadService {
  constructor(
    private readonly database: Database,
    private readonly publicUrl: string,
    private readonly retentionDays: number,
  ) {}

  /**
   * Stores a file read from `body`, within UPLOAD_LIMIT and the room the plan's maxUploadBytes
   * leaves; an empty one is refused. The room is looked at first (a declared length that cannot
   * fit, or no room at all, is refused before a byte is read), bounds the read, and is checked
   * again under the account lock when the file is published, so concurrent uploads cannot
   * together pass the plan.
   */
  async create(accountId: string, file: NewUpload, body: AsyncIterable<Uint8Array>): Promise<Upload> {
    if (file.declaredBytes !== undefined && file.declaredBytes > UPLOAD_LIMIT) throw uploadTooLarge();
    const room = await uploadRoom(this.database, accountId, (await accountPlan(this.database, accountId))?.maxUploadBytes ?? null);
    if (room.free <= 0 || (file.declaredBytes !== undefined && file.declaredBytes > room.free)) throw planFull(room, file.declaredBytes);
    const id = newId('upl');
    try {
      const { sizeBytes } = await writeMedia(this.database, { messageId: id, accountId, contentType: file.contentType, fileName: file.fileName }, body, Math.min(UPLOAD_LIMIT, room.free));
      if (sizeBytes === 0) throw new AppError('VALIDATION_ERROR', 'The file is empty: send its bytes as the request body', [{ field: 'body', message: 'is empty' }]);
      await this.database.transaction(async (tx) => {
        const now = await uploadRoom(tx, accountId, (await lockAccountPlan(tx, accountId))?.maxUploadBytes ?? null);
        if (sizeBytes > now.free) throw planFull(now, sizeBytes);
        await publishMedia(tx, id);
      });
    } catch (error) {
      await discardMedia(this.database, id);
      // A read bounded below UPLOAD_LIMIT was bounded by the plan's room.
      if (error instanceof MediaTooLargeError) throw error.limit < UPLOAD_LIMIT ? planFull(room, undefined) : uploadTooLarge();
      throw error;
    }
    return this.toUpload(await this.file(accountId, id));
  }

  /** The account's uploads, newest first. */
  async list(accountId: string, page: number, limit: number): Promise<{ data: Upload[]; meta: { total: number; page: number; limit: number } }> {
    const { rows, total } = await listUploads(this.database, accountId, limit, (page - 1) * limit);
    return { data: rows.map((row) => this.toUpload(row)), meta: { total, page, limit } };
  }

  /** The stored file of an upload of the account (GET /media/:id serves it), or NOT_FOUND. */
  async file(accountId: string, id: string): Promise<StoredMedia> {
    const stored = isUploadId(id) ? await getStoredMedia(this.database, accountId, id) : undefined;
    if (!stored) throw notFound();
    return stored;
  }

  /** Removes an upload of the account (messages already sent from it keep what they sent). */
  async delete(accountId: string, id: string): Promise<void> {
    if (!isUploadId(id) || !(await deleteStoredMedia(this.database, accountId, id))) throw notFound();
  }

  private toUpload(stored: StoredMedia): Upload {
    return {
      id: stored.messageId,
      mediaUrl: `${this.publicUrl}${uploadPath(stored.messageId)}`,
      contentType: stored.contentType,
      fileName: stored.fileName,
      sizeBytes: stored.sizeBytes,
      sha256: stored.sha256,
      createdAt: stored.createdAt,
      expiresAt: new Date(stored.createdAt.getTime() + this.retentionDays * 86_400_000),
    };
  }
}

/** What the plan's limit (null: none) leaves of the account's upload storage. */
interface UploadRoom {
  limit: number | null;
  used: number;
  free: number;
}

async function uploadRoom(db: Queryable, accountId: string, limit: number | null): Promise<UploadRoom> {
  if (limit === null) return { limit, used: 0, free: Number.POSITIVE_INFINITY };
  const used = await uploadBytesHeld(db, accountId);
  return { limit, used, free: limit - used };
}

/** The refusal of a file (of `size` bytes, if known) that the room does not take; answered with the connection closed, as the rest of the body is not read. */
const planFull = ({ limit, used }: UploadRoom, size: number | undefined): AppError =>
  new AppError(
    'PLAN_LIMIT',
    `Your plan's uploads may hold ${limit} bytes and hold ${used}${size === undefined ? '' : `; this file of ${size} bytes does not fit`}: delete uploads you no longer need (DELETE /media/{id}) or upgrade the plan`,
    { limit, used },
    { connection: 'close' },
  );

const notFound = (): AppError => new AppError('NOT_FOUND', 'Upload not found (uploads are kept MEDIA_RETENTION_DAYS)');

/** An upload over UPLOAD_LIMIT, answered with the connection closed: the rest of the body is not read (nor waited for). */
export const uploadTooLarge = (): AppError =>
  new AppError('PAYLOAD_TOO_LARGE', `The file is over ${UPLOAD_LIMIT} bytes, the largest upload (a DOCUMENT's size cap)`, { limit: UPLOAD_LIMIT }, { connection: 'close' });

/**
 * Why a send cannot name `mediaUrl` for a `type` message, when it names an upload: not one of
 * the account's (or pruned), or over the type's size cap. Undefined when it is fine or names no
 * upload.
 */
export async function uploadProblem(db: Queryable, accountId: string, mediaUrl: string, type: MediaType): Promise<FieldError | undefined> {
  const id = uploadIdOf(mediaUrl);
  if (!id) return undefined;
  const stored = await getStoredMedia(db, accountId, id);
  if (!stored) return { field: 'mediaUrl', message: `names upload ${id}, which this account does not have (uploads are kept MEDIA_RETENTION_DAYS)` };
  if (stored.sizeBytes > MEDIA_LIMITS[type]) return { field: 'mediaUrl', message: `names a file of ${stored.sizeBytes} bytes; ${type} allows ${MEDIA_LIMITS[type]}` };
  return undefined;
}

/** The file of upload `id` for a `type` message of the account, read from the store at send time. */
export async function loadUpload(db: Queryable, accountId: string, id: string, type: MediaType): Promise<MediaResult> {
  const stored = await getStoredMedia(db, accountId, id);
  const gone: MediaResult = { ok: false, permanent: true, code: 'MEDIA_UNREACHABLE', message: `Upload ${id} is no longer stored (uploads are kept MEDIA_RETENTION_DAYS)` };
  if (!stored) return gone;
  const read = await readMediaBody(readMedia(db, stored, 0, stored.sizeBytes - 1), type, { mimeType: stored.contentType, fileName: stored.fileName ?? undefined });
  // readMedia ends early, without an error, when the file is pruned while it is read.
  return read.ok && read.media.data.length !== stored.sizeBytes ? gone : read;
}

/** A message's file at send time: its upload from the store, or its URL fetched through the SSRF guard. */
export type SendMedia = (accountId: string, mediaUrl: string, type: MediaType) => Promise<MediaResult>;

export function sendMediaFrom(db: Queryable, http: GuardedHttp): SendMedia {
  return (accountId, mediaUrl, type) => {
    const id = uploadIdOf(mediaUrl);
    return id ? loadUpload(db, accountId, id, type) : fetchMedia(http, mediaUrl, type);
  };
}
