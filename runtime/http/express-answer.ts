/**
 * @module Answers written on plain `node:http` exactly as the Express application writes them, for the
 * routes served beside it without the framework (`function-handler.ts`, `config-handler.ts`):
 * `Content-Type`, `Content-Length`, Express's weak `ETag` of the body, and the DESIGN §4 error body.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { answerError } from '../errors.js';
import type { Logger } from '../log.js';

/** Express's default (weak) ETag of a body: `W/"<byte length hex>-<sha1 base64, 27 chars>"`. */
export function weakEtag(body: Buffer): string {
  const hash = body.length === 0 ? '2jmj7l5rSw0yVb/vlWAYkK/YBwk' : createHash('sha1').update(body).digest('base64').slice(0, 27);
  return `W/"${body.length.toString(16)}-${hash}"`;
}

/** A JSON body as `send` writes it: its UTF-8 bytes and their weak ETag (made once for a body sent again and again). */
export interface JsonBody {
  bytes: Buffer;
  etag: string;
}

/** The bytes and ETag of a JSON text. */
export function jsonBody(text: string): JsonBody {
  const bytes = Buffer.from(text, 'utf8');
  return { bytes, etag: weakEtag(bytes) };
}

/**
 * Writes an answer as Express's `res.status(s).type('application/json').send(text)` (or `res.end()`) does.
 * @param body - the JSON text, or one made into bytes before (`jsonBody`); undefined: no body
 */
export function send(res: ServerResponse, status: number, body: string | JsonBody | undefined, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (body === undefined) {
    res.end();
    return;
  }
  const { bytes, etag } = typeof body === 'string' ? jsonBody(body) : body;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', bytes.length);
  res.setHeader('ETag', etag);
  if (status === 204 || status === 304) {
    res.removeHeader('Content-Type');
    res.removeHeader('Content-Length');
    res.end();
    return;
  }
  if (status === 205) {
    res.setHeader('Content-Length', '0');
    res.end();
    return;
  }
  res.end(bytes);
}

/** Writes the error body of any thrown value, as the Express application's error middleware does. */
export function sendError(logger: Logger, res: ServerResponse, reqId: string, thrown: unknown): void {
  const { status, body, headers } = answerError(thrown);
  if (status >= 500) logger.error({ reqId, err: thrown }, 'request failed');
  if (res.headersSent) return;
  send(res, status, JSON.stringify(body), headers);
}
