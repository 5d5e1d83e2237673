/**
 * @module The runtime's one error type, the one function that writes the error body of DESIGN §4
 * (`toErrorBody`) and the one error mapping every transport's boundary calls (`answerError`).
 * Handlers throw `HttpError` (or let a database fault through); boundaries turn errors into answers.
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

/**
 * An unreachable database → 503 SERVICE_UNAVAILABLE (Retry-After: 1); a statement over the time limit
 * (PostgreSQL 57014, SQLite driver `STATEMENT_TIMEOUT`) → 504 STATEMENT_TIMEOUT; else unchanged.
 * The drivers mark an unreachable database with `unavailable: true` (`runtime/data/*-driver.ts`).
 */
export function mapInfrastructureError(err: unknown): unknown {
  const e = err as { code?: unknown; unavailable?: unknown } | null | undefined;
  if (e?.unavailable === true)
    return new HttpError('SERVICE_UNAVAILABLE', 'the database is unavailable; try again shortly', { cause: err, headers: { 'retry-after': '1' } });
  if (e?.code === '57014' || e?.code === 'STATEMENT_TIMEOUT')
    return new HttpError('STATEMENT_TIMEOUT', 'the request ran longer than the statement time limit; narrow the filter or ask for less', { cause: err });
  return err;
}

/** 413 naming the limit in bytes (`… larger than 10 MiB`, `… 64 KiB`). */
export function payloadTooLarge(limit: number | undefined): HttpError {
  const size = limit === undefined ? 'its limit' : limit >= 1 << 20 ? `${limit / (1 << 20)} MiB` : `${Math.round(limit / 1024)} KiB`;
  return new HttpError('PAYLOAD_TOO_LARGE', `the request body is larger than ${size}`);
}

/** The body-parser errors express raises (`type` names them), as the error of DESIGN §4 they mean. */
function bodyParserError(err: unknown): unknown {
  const e = err as { type?: unknown; limit?: unknown } | null | undefined;
  switch (e?.type) {
    case 'entity.parse.failed':
      return new HttpError('INVALID_JSON', 'the request body is not valid JSON', { cause: err });
    case 'entity.too.large':
      return payloadTooLarge(typeof e.limit === 'number' ? e.limit : undefined);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError('UNSUPPORTED_MEDIA_TYPE', 'unsupported body encoding', { cause: err });
    default:
      return err;
  }
}

/** What a transport answers for an error: status, DESIGN §4 body, headers, and the error it came to. */
export interface ErrorAnswer {
  status: number;
  body: ErrorBody;
  /** Headers that belong to the error (`retry-after`, `www-authenticate`), lower-case names; may be empty. */
  headers: Record<string, string>;
  /** The mapped error: an `HttpError`, or the original value when it becomes 500 INTERNAL. */
  error: unknown;
}

/**
 * The one error mapping of the runtime: every transport's boundary calls it — the HTTP error
 * middleware and data routes (`runtime/http/`), function routes, the in-process API client of
 * functions and agent tools (`runtime/core/api-client.ts`), agent tool calls, `ctx.rt`
 * (`runtime/realtime/functions.ts`), tus (`runtime/blobs/tus.ts`) and the WebSocket handlers that
 * answer errors (`runtime/realtime/wps.ts`, `hub.ts`) — so one fault answers alike everywhere:
 * - an `HttpError` answers its own status, body and headers;
 * - an unreachable database answers 503 SERVICE_UNAVAILABLE with `Retry-After: 1`, a statement over
 *   its time limit 504 STATEMENT_TIMEOUT (`mapInfrastructureError`);
 * - express's body-parser errors answer 400 INVALID_JSON, 413 PAYLOAD_TOO_LARGE or 415;
 * - anything else answers 500 INTERNAL with a fixed message (the caller logs the cause, never sends it).
 * Protocols with their own error form (RFC 6749 at `_token`, Web PubSub acks, SignalR completions)
 * translate from this answer at their edge.
 * @returns status, body, headers; `status >= 500` means the caller should log `err`
 * Source: DESIGN §4 (error body), STYLE §4 (error model).
 */
export function answerError(err: unknown): ErrorAnswer {
  const error = mapInfrastructureError(bodyParserError(err));
  const { status, body } = toErrorBody(error);
  return { status, body, headers: error instanceof HttpError && error.headers ? error.headers : {}, error };
}

/** Escapes one JSON Pointer segment (RFC 6901). */
export function pointerSegment(segment: string | number): string {
  return String(segment).replace(/~/g, '~0').replace(/\//g, '~1');
}
