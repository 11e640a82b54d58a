/**
 * The file of a multipart/form-data body, the way an HTML form or `curl -F file=@menu.png` sends
 * it, parsed by busboy as it arrives: the form's one file part (any field name; a part is a file
 * when it has a file name), its name and type, and its bytes as a stream. Text fields are read
 * and ignored. The whole body is bounded: the file by the caller's limit (writeMedia counts it),
 * everything around it by FORM_OVERHEAD, so no form makes the server read without end.
 */
import type { IncomingMessage } from 'node:http';
import { Busboy, type BusboyFileStream, type BusboyInstance } from '@fastify/busboy';
import { AppError } from '../platform/errors.js';

/** The most a form may carry besides its file: boundaries, part headers, text fields. */
export const FORM_OVERHEAD = 1024 * 1024;

export interface FormFile {
  /** The part's file name as the client sent it (already without a path). */
  fileName: string;
  /** The part's Content-Type (text/plain when the part has none, as RFC 7578 says). */
  contentType: string;
  /**
   * The file's bytes. It ends only once the whole form is read and well formed, and throws
   * otherwise (a second file, a cut-off or malformed body, more than the form may carry), so a
   * consumer that stores it never keeps the file of a broken form.
   */
  body: AsyncIterable<Uint8Array>;
}

/**
 * Starts reading the form of `request` and resolves with its file part once its headers arrive.
 * `tooLarge` is the error for a body declared or read over `fileLimit` + FORM_OVERHEAD bytes.
 * Every other refusal is VALIDATION_ERROR on `body`. Refusals close the connection, since the rest
 * of the body is not read.
 */
export function readFormFile(request: IncomingMessage, fileLimit: number, tooLarge: () => Error): Promise<FormFile> {
  const bodyLimit = fileLimit + FORM_OVERHEAD;
  // A declared length over the bound: refused before a byte is read.
  if (Number(request.headers['content-length']) > bodyLimit) return Promise.reject(tooLarge());
  let form: BusboyInstance;
  try {
    form = Busboy({
      headers: { ...request.headers, 'content-type': request.headers['content-type'] ?? '' },
      limits: { files: 1, fields: 32, fieldSize: 64 * 1024, parts: 64 },
    });
  } catch (error) {
    return Promise.reject(malformed(messageOf(error)));
  }
  return new Promise<FormFile>((resolve, reject) => {
    // Until the file part arrives, a failure rejects the promise; after, the file's stream throws it.
    let failure: Error | undefined;
    let handed = false;
    let file: BusboyFileStream | undefined;
    let formEnded: () => void = () => undefined;
    let formFailed: (error: Error) => void = () => undefined;
    const finished = new Promise<void>((end, fail) => {
      formEnded = end;
      formFailed = fail;
    });
    finished.catch(() => undefined);
    const fail = (error: Error): void => {
      if (failure) return;
      failure = error;
      request.unpipe(form);
      request.resume();
      // The consumer's read (if one is waiting) throws it; the stream itself has nobody to tell.
      if (file && !file.readableEnded) file.destroy(error);
      if (handed) formFailed(error);
      else reject(error);
    };

    let read = 0;
    request.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > bodyLimit) fail(tooLarge());
    });
    request.on('close', () => {
      if (!request.readableEnded) fail(malformed('the client went away before the form ended'));
    });
    form.on('error', (error: unknown) => fail(malformed(messageOf(error))));
    form.on('filesLimit', () => fail(malformed('the form has more than one file: send one file per upload')));
    form.on('partsLimit', () => fail(malformed('the form has too many parts')));
    form.on('finish', () => {
      if (handed) formEnded();
      else fail(malformed('the form has no file: send it as a file part (curl -F file=@path)'));
    });
    form.on('file', (_field, stream, fileName, _encoding, contentType) => {
      if (handed || failure) {
        stream.resume();
        return;
      }
      handed = true;
      file = stream.on('error', () => undefined);
      resolve({ fileName, contentType, body: fileThenForm(stream, finished, () => failure) });
    });
    request.pipe(form);
  });
}

async function* fileThenForm(stream: AsyncIterable<Uint8Array>, finished: Promise<void>, failure: () => Error | undefined): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of stream) {
      const error = failure();
      if (error) throw error;
      yield chunk;
    }
  } catch (error) {
    throw failure() ?? (error instanceof AppError ? error : malformed(messageOf(error)));
  }
  await finished;
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const malformed = (why: string): AppError =>
  new AppError('VALIDATION_ERROR', `The form could not be read: ${why}`, [{ field: 'body', message: why }], { connection: 'close' });
