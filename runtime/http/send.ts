/**
 * @module Writes JSON bodies of data routes, enforcing the result-size limit of DESIGN §4.
 */
import type { Response } from 'express';
import { HttpError } from '../errors.js';
import { MAX_RESULT_BYTES } from '../contract/limits.js';

export { MAX_RESULT_BYTES };

/**
 * Sends `body` as JSON with `status`.
 * @throws HttpError RESULT_TOO_LARGE (400) when the JSON is larger than `MAX_RESULT_BYTES`, naming the
 *   remedies (SPEC §7: `lookups=id`, a smaller `pageSize`, a narrower `select`)
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  if (Buffer.byteLength(text) > MAX_RESULT_BYTES) {
    throw new HttpError('RESULT_TOO_LARGE', 'the result is larger than the 5 MiB limit; ask for less with lookups=id, a smaller pageSize or a narrower select');
  }
  res.status(status).type('application/json').send(text);
}
