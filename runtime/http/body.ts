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
  const text = await readText(req, limit);
  const first = /\S/.exec(text)?.[0];
  if (first === undefined) return undefined;
  if (first !== '{' && first !== '[') throw new HttpError('INVALID_JSON', 'the request body must be a JSON object or array');
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError('INVALID_JSON', 'the request body is not valid JSON');
  }
}

/**
 * The whole body as UTF-8 text, read with stream events (an async iterator costs several µs more per
 * request). Over `limit` bytes the request is destroyed, as leaving a `for await` loop would do.
 * @throws HttpError PAYLOAD_TOO_LARGE (413); the stream's error when the client goes away mid-body
 */
function readText(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: unknown) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', done);
      req.off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, size).toString('utf8'));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        done(payloadTooLarge(limit));
        req.destroy();
      }
    };
    const onEnd = () => done();
    // Closed before its end: the client went away (the iterator answered ERR_STREAM_PREMATURE_CLOSE).
    const onClose = () => {
      if (!req.readableEnded) done(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', done);
    req.on('close', onClose);
  });
}
