/**
 * @module Error codes of the API and their HTTP statuses (DESIGN §4): the one table that decides a
 * status. The runtime's `HttpError` reads it; the OpenAPI document's shared error responses are
 * derived from it; README.md documents every row (checked by test/runtime/errors.test.ts).
 */

/** Every error code the runtime answers with, and its HTTP status. */
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  INVALID_JSON: 400,
  INVALID_FILTER: 400,
  INVALID_PARAMETER: 400,
  RESULT_TOO_LARGE: 400,
  LISTEN_ON_VIEW: 400,
  INVALID_TOKEN: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  EMAIL_NOT_VERIFIED: 403,
  SIGNUP_DISABLED: 403,
  BLOB_SIGNATURE_INVALID: 403,
  BLOB_URL_EXPIRED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  USERNAME_TAKEN: 409,
  UNIQUE_VIOLATION: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  HOST_NOT_ALLOWED: 421,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  FUNCTION_TIMEOUT: 504,
  STATEMENT_TIMEOUT: 504,
  GATEWAY_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

/** What each status means, for the OpenAPI document's shared `Error<status>` responses. */
const STATUS_MEANING: Record<ErrorStatus, string> = {
  400: 'Invalid request (validation, filter or parameter error)',
  401: 'Authentication required',
  403: 'Not allowed for the caller',
  404: 'Not found',
  405: 'Method not allowed on this path',
  409: 'Conflict with existing rows',
  413: 'Body too large',
  415: 'Body of the wrong media type (not JSON, or not multipart for an upload)',
  416: 'Byte range outside the file',
  421: "The request's Host is not one this server answers for",
  429: 'Too many failed sign-ins',
  500: 'Server fault (the cause is logged with the request id, never sent)',
  502: "An external collection's provider failed or gave a bad answer",
  503: 'The database is unavailable; retry later',
  504: 'The work (a function, a statement, an external provider) ran past its time limit',
};

/** The codes answered with `status`, in table order. */
export function codesOfStatus(status: number): ErrorCode[] {
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((c) => ERROR_STATUS[c] === status);
}

/** Every status of the table, ascending, with its meaning and codes, e.g. `400 → "Invalid request …; codes: VALIDATION_FAILED, …"`. */
export function errorStatusDescriptions(): Record<ErrorStatus, string> {
  const statuses = [...new Set(Object.values(ERROR_STATUS))].sort((a, b) => a - b);
  return Object.fromEntries(statuses.map((s) => [s, `${STATUS_MEANING[s]} (code ${codesOfStatus(s).join(' or ')})`])) as Record<ErrorStatus, string>;
}
