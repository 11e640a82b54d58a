/**
 * Sending a file from this computer, shared by the Send page and the Inbox's reply box: the file
 * is uploaded as soon as it is chosen (POST /media, its bytes as the body), and the page puts the
 * upload's mediaUrl in its media URL field, which a send then takes like any other address.
 */
import { useMutation } from '@tanstack/react-query';
import { SIZE_CAPS, UPLOAD_LIMIT } from '../../src/outbound/media-limits';
import { api, ApiError } from './api';
import type { One, Upload } from './types';
import { ErrorBox, Field, formatBytes } from './ui';

/** What the chooser offers for each media type (a document may be any file). */
const UPLOAD_ACCEPT: Partial<Record<string, string>> = { IMAGE: 'image/*', VIDEO: 'video/*', AUDIO: 'audio/*', STICKER: 'image/webp' };

/** Uploads a chosen file; `onUploaded` gets the upload (its mediaUrl goes in the page's media URL). */
export function useUpload(onUploaded: (upload: Upload) => void) {
  return useMutation({
    mutationFn: async ({ file, type }: { file: File; type: string }) => {
      // The most POST /media takes, and the most a send of this type takes (the server's caps):
      // a larger file is refused here, not sent whole to be refused.
      if (file.size > UPLOAD_LIMIT) {
        throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `${file.name} is larger than ${formatBytes(UPLOAD_LIMIT)}, the most a file can be.`);
      }
      const cap = SIZE_CAPS[type as keyof typeof SIZE_CAPS];
      if (cap !== undefined && file.size > cap) {
        throw new ApiError(
          400,
          'VALIDATION_ERROR',
          `${file.name} is ${formatBytes(file.size)}; ${type === 'IMAGE' ? 'an image' : `a ${type.toLowerCase()}`} can be at most ${formatBytes(cap)}. Send it as a document, or choose a smaller file.`,
        );
      }
      return (await api<One<Upload>>('/media', { method: 'POST', query: { fileName: file.name }, file })).data;
    },
    onSuccess: onUploaded,
  });
}

/**
 * "Upload a file": the chooser, then what is being uploaded, what was (while `mediaUrl` is still
 * its address) or why not. The chooser is emptied after each choice, so the same file can be
 * chosen again after an error.
 */
export function UploadField({ upload, mediaUrl, type }: { upload: ReturnType<typeof useUpload>; mediaUrl: string; type: string }) {
  const uploaded = upload.data?.mediaUrl === mediaUrl.trim() ? upload.data : undefined;
  return (
    <div>
      <Field
        label="Upload a file"
        hint={
          <span role="status">
            {upload.isPending
              ? `Uploading ${upload.variables.file.name}…`
              : uploaded
                ? `Uploaded ${uploaded.fileName ?? 'the file'} (${formatBytes(uploaded.sizeBytes)}).`
                : 'Or choose a file on this computer: it is uploaded at once and its address filled in.'}
          </span>
        }
      >
        {(props) => (
          <input
            {...props}
            type="file"
            accept={UPLOAD_ACCEPT[type]}
            disabled={upload.isPending}
            onChange={(e) => {
              const file = e.target.files?.[0];
              e.target.value = '';
              if (file) upload.mutate({ file, type });
            }}
          />
        )}
      </Field>
      <ErrorBox error={upload.error} title="Not uploaded." />
    </div>
  );
}
