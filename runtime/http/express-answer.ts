/**
 * @module Answers written on plain `node:http` exactly as the Express application writes them, for the
 * routes served beside it without the framework (`function-handler.ts`, `config-handler.ts`):
 * `Content-Type`, `Content-Length`, Express's weak `ETag` of the body, and the DESIGN §4 error body.
 */
import { hash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { answerError } from '../errors.js';
import type { Logger } from '../log.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Express's default (weak) ETag of a body: `W/"<byte length hex>-<sha1 base64 of its UTF-8, 27 chars>"`. */
export function weakEtag(text: string, byteLength = Buffer.byteLength(text)): string {
  const sha1 = byteLength === 0 ? '2jmj7l5rSw0yVb/vlWAYkK/YBwk' : hash('sha1', text, 'base64').slice(0, 27);
  return `W/"${byteLength.toString(16)}-${sha1}"`;
}

/** A JSON body as `send` writes it: its text, its UTF-8 length and its weak ETag (made once for a body sent again and again). */
export interface JsonBody {
  text: string;
  byteLength: number;
  etag: string;
}

/** The length and ETag of a JSON text. */
export function jsonBody(text: string): JsonBody {
  const byteLength = Buffer.byteLength(text);
  return { text, byteLength, etag: weakEtag(text, byteLength) };
}

/**
 * Writes an answer as Express's `res.status(s).type('application/json').send(text)` (or `res.end()`) does,
 * with the same headers in the same order, in one `writeHead` (cheaper than a `setHeader` per header)
 * and one write.
 * @param body - the JSON text, or one made into bytes before (`jsonBody`); undefined: no body
 * @param headers - written first: the request's `x-request-id`, and any of the answer's own (`retry-after`…)
 */
export function send(res: ServerResponse, status: number, body: string | JsonBody | undefined, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  const { text, byteLength, etag } = typeof body === 'string' ? jsonBody(body) : body;
  // Express drops Content-Type and Content-Length of a 204 and a 304, and sends a 205 with no body.
  if (status === 204 || status === 304) res.writeHead(status, { ...headers, ETag: etag }).end();
  else if (status === 205) res.writeHead(status, { ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': '0', ETag: etag }).end();
  // A text body goes out in one write with the head (a Buffer would be a second one).
  else res.writeHead(status, { ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': byteLength, ETag: etag }).end(text);
}

/**
 * Writes the error body of any thrown value, as the Express application's error middleware does, with
 * the request's `x-request-id`.
 */
export function sendError(logger: Logger, res: ServerResponse, reqId: string, thrown: unknown): void {
  const { status, body, headers } = answerError(thrown);
  if (status >= 500) logger.error({ reqId, err: thrown }, 'request failed');
  if (res.headersSent) return;
  send(res, status, JSON.stringify(body), { 'x-request-id': reqId, ...headers });
}
