/**
 * @module The runtime's one error type and the one function that writes the error body of DESIGN §4.
 * Handlers throw `HttpError`; only the HTTP error middleware turns errors into responses.
 */

import { ERROR_STATUS, type ErrorCode } from './contract/errors.js';

/** The code table lives in the contract (`runtime/contract/errors.ts`); re-exported for existing imports. */
export { ERROR_STATUS, type ErrorCode };

/** One entry of `details`: a JSON Pointer into the request part (`/title`, `/2/price`) and a message. */
export interface ErrorDetail {
  path: string;
  message: string;
  code?: string;
}

/** The error body of DESIGN §4. */
export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: ErrorDetail[];
}

/**
 * An error that becomes an HTTP response. The status comes from `ERROR_STATUS[code]` unless given.
 * `cause` is logged with the request id and never serialized.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  /** Response headers that belong to this error (`Retry-After`, `WWW-Authenticate`), lower-case names. */
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetail[]; status?: number; cause?: unknown; headers?: Record<string, string> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HttpError';
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.details = options.details;
    this.headers = options.headers;
  }
}

/** Writes the DESIGN §4 body for any thrown value; non-`HttpError`s become a fixed 500 message. */
export function toErrorBody(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof HttpError) {
    const body: ErrorBody = { error: err.message, code: err.code };
    if (err.details && err.details.length > 0) body.details = err.details;
    return { status: err.status, body };
  }
  return { status: 500, body: { error: 'Internal server error', code: 'INTERNAL' } };
}

/** Escapes one JSON Pointer segment (RFC 6901). */
export function pointerSegment(segment: string | number): string {
  return String(segment).replace(/~/g, '~0').replace(/\//g, '~1');
}
