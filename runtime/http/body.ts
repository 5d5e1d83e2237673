/**
 * @module Reading a JSON request body from a plain `node:http` request, after the caller has been
 * authenticated, routed and admitted (issue "reliability": nothing is parsed for a request that will
 * be refused). The limit is per route; a body over it is refused as soon as its size is known.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError, payloadTooLarge } from '../errors.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;

/** True when the request carries a body (a non-zero Content-Length, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return length !== undefined ? Number(length) > 0 : req.headers['transfer-encoding'] !== undefined;
}

/**
 * The parsed JSON body, or undefined when none was sent.
 * @param limit - bytes; larger bodies answer 413 without being read to the end
 * @throws HttpError UNSUPPORTED_MEDIA_TYPE (415) for a body that is not JSON (type, charset or
 *   content encoding); PAYLOAD_TOO_LARGE (413); INVALID_JSON (400) for malformed JSON or a top level
 *   that is not an object or array
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  if (!hasBody(req)) return undefined;
  const [type, ...params] = (req.headers['content-type'] ?? '').split(';').map((s) => s.trim());
  if (!JSON_TYPE.test(type)) throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be JSON (Content-Type: application/json)');
  const charset = params
    .find((p) => /^charset=/i.test(p))
    ?.slice(8)
    .replace(/"/g, '')
    .toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new HttpError('UNSUPPORTED_MEDIA_TYPE', `unsupported charset "${charset}"; send UTF-8`);
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') throw new HttpError('UNSUPPORTED_MEDIA_TYPE', `unsupported content encoding "${encoding}"`);
  if (Number(req.headers['content-length'] ?? 0) > limit) throw payloadTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw payloadTooLarge(limit);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks, size).toString('utf8');
  const first = /\S/.exec(text)?.[0];
  if (first === undefined) return undefined;
  if (first !== '{' && first !== '[') throw new HttpError('INVALID_JSON', 'the request body must be a JSON object or array');
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError('INVALID_JSON', 'the request body is not valid JSON');
  }
}
