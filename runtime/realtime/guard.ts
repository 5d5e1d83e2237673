/**
 * @module The boundary between real-time clients and the process (issue 20 §1, STYLE: bad input never
 * ends the process). Every upgrade handler, socket listener and bus handler runs inside `contain`: an
 * unexpected exception (thrown, or a rejected promise) becomes one error log line carrying the request
 * or connection id and a close of that one socket — 400 at the upgrade, 1011 on an open socket — and
 * never an uncaught exception. Close reasons are cut to the 123 bytes a WebSocket close frame holds.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { answerError } from '../errors.js';
import type { TrustedPeer } from '../auth/client-address.js';
import { requestIdOf } from '../logs/request-log.js';
import type { Logger } from '../log.js';

/** Most bytes of a WebSocket close reason (RFC 6455 §5.5: 125-byte control payload − 2-byte code). */
export const MAX_CLOSE_REASON_BYTES = 123;

/** The close code of an unexpected server error on an open socket (RFC 6455 §7.4.1). */
export const INTERNAL_ERROR_CLOSE = 1011;

/**
 * `reason` cut to at most `MAX_CLOSE_REASON_BYTES` UTF-8 bytes, never inside a character (`ws` throws a
 * `RangeError` for a longer reason).
 */
export function closeReason(reason: string): string {
  if (Buffer.byteLength(reason) <= MAX_CLOSE_REASON_BYTES) return reason;
  let out = '';
  let bytes = 0;
  for (const ch of reason) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > MAX_CLOSE_REASON_BYTES) break;
    out += ch;
    bytes += size;
  }
  return out;
}

/** A client-sent value quoted in a message: JSON, at most 100 characters; never throws, whatever its shape. */
export function describe(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? typeof value;
  } catch {
    text = Array.isArray(value) ? 'an array' : typeof value;
  }
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/**
 * Runs `fn` (synchronous or returning a promise). A throw or a rejection goes to `onError`, which is
 * itself contained: nothing escapes to the caller or becomes an unhandled rejection.
 */
export function contain(fn: () => unknown, onError: (err: unknown) => void): void {
  const failed = (err: unknown) => {
    try {
      onError(err);
    } catch {
      // The last resort failed too (a broken socket): there is nothing left to tell anyone.
    }
  };
  try {
    const result = fn();
    if (result instanceof Promise) result.catch(failed);
  } catch (err) {
    failed(err);
  }
}

/**
 * Wraps a listener of an open socket: an unexpected exception is logged with `context()` (the
 * connection id) and `close()` ends that socket (1011); `close` that throws terminates `socket`.
 */
export function guardListener<A extends unknown[]>(
  logger: Logger,
  socket: WebSocket,
  context: () => Record<string, unknown>,
  close: () => void,
  listener: (...args: A) => unknown,
): (...args: A) => void {
  return (...args) =>
    contain(
      () => listener(...args),
      (err) => {
        logger.error({ err, ...context() }, 'real-time socket handler failed: the socket is closed');
        try {
          close();
        } catch {
          socket.terminate();
        }
      },
    );
}

/** Closes a socket that has no session yet with 1011 (terminates it when even that fails). */
export function closeInternal(socket: WebSocket): void {
  try {
    socket.close(INTERNAL_ERROR_CLOSE, 'internal server error');
  } catch {
    socket.terminate();
  }
}

/**
 * The id an upgrade request is logged under (`requestIdOf`): a trusted proxy's `x-request-id`
 * (64 characters at most), else a new UUID.
 * @param trusted - the trusted-proxy test (`AuthService.trustedPeer`); absent: no peer is trusted
 */
export function upgradeRequestId(req: IncomingMessage, trusted?: TrustedPeer): string {
  return requestIdOf(req, trusted).reqId;
}

/**
 * The URL of an upgrade request, or null when it cannot be parsed. The path is taken as a path even
 * when it starts with `//` (which `new URL(path, base)` reads as a host and may refuse).
 */
export function upgradeUrl(req: IncomingMessage): URL | null {
  const path = req.url ?? '/';
  try {
    return new URL(`http://localhost${path.startsWith('/') ? path : `/${path}`}`);
  } catch {
    return null;
  }
}

/**
 * Answers an upgrade request with the status of `err` (an `HttpError`, else 500), its DESIGN §4 body and
 * headers (`Retry-After`), and closes the socket; never throws.
 */
export function refuseUpgrade(socket: Duplex, err: unknown): void {
  const { status, body: errorBody, headers } = answerError(err);
  const body = JSON.stringify(errorBody);
  const extra = Object.entries(headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  try {
    if (!socket.writable) return void socket.destroy();
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
    );
  } catch {
    socket.destroy();
  }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  421: 'Misdirected Request',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
};

/**
 * A socket `error` listener that ignores the error (the `close` that follows does the work). Defined
 * here, not as an arrow inside an upgrade handler: a closure there would keep the handler's scope —
 * the upgrade request, its URL and token — alive as long as the socket (about 4 KiB per connection).
 */
export function ignoreSocketError(): void {}
