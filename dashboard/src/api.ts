/**
 * The dashboard's one way to the server: JSON routes under /dashboard/api with the session
 * cookie, the CSRF token on every state-changing request, and errors turned into ApiError from
 * the API's error envelope `{success:false, error:{code, message, details}, requestId}`.
 */

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: FieldError[] | Record<string, unknown>,
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The message for one form field, when the server named it. */
  fieldMessage(field: string): string | undefined {
    return Array.isArray(this.details) ? this.details.find((detail) => detail.field === field)?.message : undefined;
  }
}

let csrfToken: string | null = null;
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Fired when the server says the session is gone, so the app can send the user to log in. */
export const UNAUTHORIZED_EVENT = 'waygate:unauthorized';

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  body?: unknown;
  /** A raw text body (CSV import) instead of JSON. */
  text?: { contentType: string; body: string };
  /** A file (POST /media) as the raw body, sent with its own type. */
  file?: Blob;
  headers?: Record<string, string>;
  query?: Record<string, string | number | undefined | null>;
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  let body: string | Blob | undefined;
  if (options.file) {
    headers['content-type'] = options.file.type || 'application/octet-stream';
    body = options.file;
  } else if (options.text) {
    headers['content-type'] = options.text.contentType;
    body = options.text.body;
  } else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined && value !== null && value !== '') query.set(key, String(value));
  }
  const url = `/dashboard/api${path}${query.size > 0 ? `?${query}` : ''}`;

  let response: Response;
  try {
    response = await fetch(url, { method, headers, body, credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached. Check your connection and try again.');
  }
  const payload: unknown = response.headers.get('content-type')?.includes('application/json') ? await response.json() : undefined;
  if (!response.ok) {
    const envelope = payload as { error?: { code?: string; message?: string; details?: FieldError[] }; requestId?: string } | undefined;
    const error = new ApiError(
      response.status,
      envelope?.error?.code ?? 'HTTP_ERROR',
      envelope?.error?.message ?? `The server answered ${response.status} ${response.statusText}`,
      envelope?.error?.details,
      envelope?.requestId,
    );
    if (response.status === 401 && !path.startsWith('/login') && !path.startsWith('/signup')) window.dispatchEvent(new Event(UNAUTHORIZED_EVENT));
    throw error;
  }
  return payload as T;
}

/** A readable message for any thrown value. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return 'Something went wrong';
}
