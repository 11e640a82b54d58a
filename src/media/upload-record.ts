/**
 * The one definition of the upload record (as src/devices/device-record.ts is for devices): the
 * routes answer with UploadSchema, `Upload` (timestamps are Date) is what UploadService returns,
 * `UploadJson` is what the dashboard and the tests import. Imports nothing but typebox.
 */
import Type, { type Static } from 'typebox';
import { DateTime, type Jsonified } from '../platform/record-schema.js';

/** A file uploaded to send (POST /media). The API writes the fields in this order. */
export const UploadSchema = Type.Object(
  {
    id: Type.String({ description: 'upl_…' }),
    mediaUrl: Type.String({ description: "What a send names in `mediaUrl` to send this file (PUBLIC_URL/media/{id}); GET on it answers the file" }),
    contentType: Type.String({ description: 'The Content-Type it was uploaded with' }),
    fileName: Type.Union([Type.String(), Type.Null()], { description: 'The fileName it was uploaded with; a DOCUMENT is sent under this name' }),
    sizeBytes: Type.Integer(),
    sha256: Type.String({ description: 'SHA-256 of the bytes, hex (also the ETag of GET /media/{id})' }),
    createdAt: DateTime,
    expiresAt: DateTime,
  },
  { title: 'Upload' },
);

/** An upload on the server (timestamps are Date). */
export type Upload = Static<typeof UploadSchema>;
/** An upload as the API shows it (timestamps are ISO strings). */
export type UploadJson = Jsonified<Upload>;
