/**
 * The file of an incoming media message, downloaded from the network into the media store
 * before the message is stored (so message.received already carries a mediaUrl that serves it).
 * Within the size cap of its type; a failed attempt is tried again (DOWNLOAD_RETRY_MS) unless the
 * network says the failure is permanent; in the end the file is STORED, or the message records
 * why not (media.status FAILED with media.error) — it is stored either way, never lost.
 */
import type { Logger } from 'pino';
import type { Queryable } from '../platform/database.js';
import { MediaDownloadError, type IncomingFile, type IncomingMedia, type MediaType } from '../network/network.js';
import { MEDIA_LIMITS } from '../outbound/media.js';
import type { MessageMedia } from '../messaging/message-record.js';
import { discardMedia, MediaTooLargeError, writeMedia } from './media-store.js';

/** Waits before the second and third attempts. */
export const DOWNLOAD_RETRY_MS = [1_000, 3_000];
/** An attempt whose bytes stop coming for this long fails (and is retried). */
const IDLE_TIMEOUT_MS = 60_000;

/** The path that serves a stored file: the record's mediaUrl for incoming media. */
export const mediaPath = (messageId: string): string => `/messages/${messageId}/media`;

export interface IncomingDownload {
  messageId: string;
  accountId: string;
  type: MediaType;
  /** What the network said of the file before it was downloaded. */
  media?: IncomingMedia | undefined;
  download: () => Promise<IncomingFile>;
}

export interface ReceivedMedia {
  /** The record's media (STORED, or FAILED with its error). */
  media: MessageMedia;
  /** Set when STORED: the file waits, invisible, for the statement that stores its message. */
  mediaUrl: string | undefined;
}

class IdleTimeout extends Error {}

/** The stream's pieces, failing (and destroying the stream) when none comes for IDLE_TIMEOUT_MS. */
async function* withIdleTimeout(stream: IncomingFile['stream']): AsyncGenerator<Uint8Array> {
  const iterator = stream[Symbol.asyncIterator]();
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new IdleTimeout(`No bytes for ${IDLE_TIMEOUT_MS / 1000} s`)), IDLE_TIMEOUT_MS);
      timer.unref();
    });
    try {
      const next = await Promise.race([iterator.next(), idle]);
      if (next.done) return;
      yield next.value;
    } catch (error) {
      stream.destroy?.(error as Error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

const failed = (base: Omit<MessageMedia, 'status'>, code: string, message: string): ReceivedMedia => ({
  media: { ...base, status: 'FAILED', error: { code, message } },
  mediaUrl: undefined,
});

/** Downloads incoming files into the media store for the worker's device runners. */
export class IncomingMediaReceiver {
  constructor(
    private readonly db: Queryable,
    private readonly log: Logger,
    private readonly retryMs: readonly number[] = DOWNLOAD_RETRY_MS,
  ) {}

  receive(file: IncomingDownload): Promise<ReceivedMedia> {
    return receiveMedia(this.db, file, this.log, this.retryMs);
  }

  /** A stored file whose message turned out to be a redelivery (stored before): dropped. */
  discard(messageId: string): Promise<void> {
    return discardMedia(this.db, messageId);
  }
}

async function receiveMedia(db: Queryable, file: IncomingDownload, log: Logger, retryMs: readonly number[]): Promise<ReceivedMedia> {
  const limit = MEDIA_LIMITS[file.type];
  const base: Omit<MessageMedia, 'status'> = { mimeType: 'application/octet-stream', ...file.media };
  if (file.media?.sizeBytes !== undefined && file.media.sizeBytes > limit) {
    return failed(base, 'MEDIA_TOO_LARGE', `The file is ${file.media.sizeBytes} bytes; ${file.type} allows ${limit}`);
  }
  let last: { code: string; message: string } = { code: 'MEDIA_DOWNLOAD_FAILED', message: 'The file could not be downloaded' };
  for (let attempt = 1; attempt <= retryMs.length + 1; attempt++) {
    try {
      const opened = await file.download();
      const mimeType = file.media?.mimeType ?? opened.mimeType ?? base.mimeType;
      const fileName = file.media?.fileName ?? opened.fileName;
      const written = await writeMedia(db, { messageId: file.messageId, accountId: file.accountId, contentType: mimeType, fileName }, withIdleTimeout(opened.stream), limit);
      return {
        media: { ...base, mimeType, ...(fileName ? { fileName } : {}), sizeBytes: written.sizeBytes, status: 'STORED', sha256: written.sha256 },
        mediaUrl: mediaPath(file.messageId),
      };
    } catch (error) {
      await discardMedia(db, file.messageId);
      if (error instanceof MediaTooLargeError) return failed(base, 'MEDIA_TOO_LARGE', `The file is over ${limit} bytes, the limit for ${file.type}`);
      const permanent = error instanceof MediaDownloadError && error.permanent;
      last = error instanceof MediaDownloadError ? { code: error.code, message: error.message } : { code: 'MEDIA_DOWNLOAD_FAILED', message: `The file could not be downloaded: ${(error as Error).message}` };
      log.warn({ messageId: file.messageId, attempt, code: last.code, permanent, err: error }, 'downloading an incoming file failed');
      if (permanent) return failed(base, last.code, last.message);
      const wait = retryMs[attempt - 1];
      if (wait !== undefined) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
  return failed(base, last.code, `${last.message} (gave up after ${retryMs.length + 1} attempts)`);
}
