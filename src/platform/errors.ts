/**
 * One closed set of error codes, one map from code to HTTP status. Everything a client can see
 * as an error goes through AppError; anything else is a bug and is answered 500 INTERNAL.
 */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  QUOTA_EXCEEDED: 402,
  FORBIDDEN: 403,
  PLAN_LIMIT: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  CONTACT_EXISTS: 409,
  NO_CONNECTED_DEVICE: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  /** An edit of a message that cannot be edited (its type, its state, or past the network's window). */
  NOT_EDITABLE: 409,
  /** A delete for everyone of a message that cannot be deleted (its state, or past the network's window). */
  NOT_DELETABLE: 409,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  RATE_LIMITED: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldError {
  field: string;
  message: string;
}

export type ErrorDetails = FieldError[] | Record<string, unknown>;

export function codeToStatus(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

export class AppError extends Error {
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.statusCode = codeToStatus(code);
  }
}

export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} not found`);

/** A VALIDATION_ERROR for the field errors found (at least one), its message the first one's ("to must …"). */
export const invalidFields = (errors: FieldError[]): AppError => new AppError('VALIDATION_ERROR', `${errors[0]!.field} ${errors[0]!.message}`, errors);

export const validationError = (field: string, message: string): AppError =>
  new AppError('VALIDATION_ERROR', `${field}: ${message}`, [{ field, message }]);
