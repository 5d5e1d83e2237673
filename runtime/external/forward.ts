/**
 * @module Reads of an external collection (SPEC §4.10): `GET /api/<Name>` and `GET /api/<Name>/<id>`
 * are forwarded to the provider's `url` (and `url/<id>`) with the request's query parameters and the
 * connection's credentials, nothing else of the caller's request (no cookies, no bearer token), and
 * the provider's JSON answer is returned as it is. Responses are not cached. Failures never echo the
 * provider's text or headers: 404 stays 404, a refused query 400, a timeout 504, anything else 502.
 */
import type { ExternalCollection } from '../manifest.js';
import { HttpError } from '../errors.js';
import { MAX_RESULT_BYTES } from '../contract/limits.js';
import type { Logger } from '../log.js';
import { providerFailure, serviceConnection, type ServiceConnection } from './connection.js';

/** Default provider time limit (DESIGN §4 "External details"): 10 s. */
export const DEFAULT_EXTERNAL_TIMEOUT_MS = 10_000;

/** An external collection ready to serve: its definition and its connection. */
export interface ExternalSource {
  external: ExternalCollection;
  connection: ServiceConnection;
}

/**
 * The provider URL of a read: `url` or `url/<id>` (the id one encoded path segment after the path of
 * `url`, before its query), then the caller's query parameters (repeated keys kept). A parameter fixed
 * in `url`'s query string wins: the caller's copies of it are dropped.
 * @throws HttpError INVALID_PARAMETER (detail `/id`) for an id that is `.`, `..` or holds a slash or
 *   backslash (decoded from `%2F`/`%5C`): it would name another path of the provider
 */
export function providerUrl(url: string, id: string | undefined, query: Record<string, unknown>): string {
  const target = new URL(url);
  if (id !== undefined) {
    if (id === '.' || id === '..' || /[/\\]/.test(id)) {
      throw new HttpError('INVALID_PARAMETER', `the id ${JSON.stringify(id)} is not a valid item id`, {
        details: [{ path: '/id', message: 'an item id cannot be "." or ".." nor contain "/" or "\\"' }],
      });
    }
    target.pathname = `${target.pathname.replace(/\/+$/, '')}/${encodeURIComponent(id)}`;
  }
  const fixed = new Set(target.searchParams.keys());
  for (const [key, value] of Object.entries(query)) {
    if (fixed.has(key)) continue;
    for (const v of Array.isArray(value) ? value : [value]) if (v !== undefined) target.searchParams.append(key, String(v));
  }
  return target.toString();
}

/** Reads at most `limit` bytes of a response body. @throws HttpError BAD_GATEWAY past the limit */
async function boundedText(res: Response, name: string, limit: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > limit) throw new HttpError('BAD_GATEWAY', `${name}: the provider's answer is larger than ${limit} bytes`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.length;
    if (size > limit) throw new HttpError('BAD_GATEWAY', `${name}: the provider's answer is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Forwards one read and answers the provider's JSON.
 * @param id - the item id from the path, or undefined for the list
 * @param signal - the caller's cancellation (a function that timed out); the provider time limit is added
 * @returns status 200 and the provider's body
 * @throws HttpError NOT_FOUND (the provider answered 404 for an item), INVALID_PARAMETER (it answered
 *   400 or 422: the query), GATEWAY_TIMEOUT (no answer within `timeoutMs`), BAD_GATEWAY (anything
 *   else: unreachable, another status, a 401 after one renewal, a body that is not JSON or too large)
 */
export async function forwardRead(
  source: ExternalSource,
  request: { id?: string; query: Record<string, unknown>; signal?: AbortSignal; reqId: string },
  logger: Logger,
): Promise<{ status: number; body: unknown }> {
  const { external, connection } = source;
  const name = external.name;
  const timeout = AbortSignal.timeout(external.timeoutMs ?? DEFAULT_EXTERNAL_TIMEOUT_MS);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  const url = providerUrl(external.url, request.id, request.query);
  const attempt = async (): Promise<{ res: Response; headers: Record<string, string> }> => {
    const headers = await connection.headers(signal);
    try {
      return { res: await fetch(url, { headers: { accept: 'application/json', ...headers }, signal, redirect: 'error' }), headers };
    } catch (err) {
      throw providerFailure(name, err);
    }
  };
  const first = await attempt();
  let res = first.res;
  if (res.status === 401 && connection.renew(first.headers)) {
    await res.body?.cancel();
    ({ res } = await attempt());
  }
  const refused = (message: string, code: 'NOT_FOUND' | 'INVALID_PARAMETER' | 'BAD_GATEWAY') => {
    logger.warn({ reqId: request.reqId, external: name, status: res.status }, 'external provider refused a read');
    return new HttpError(code, message);
  };
  if (!res.ok) {
    await res.body?.cancel();
    if (res.status === 404 && request.id !== undefined) throw refused(`${name} ${JSON.stringify(request.id)} was not found`, 'NOT_FOUND');
    if (res.status === 400 || res.status === 422) throw refused(`${name}: the provider refused the query (status ${res.status})`, 'INVALID_PARAMETER');
    throw refused(`${name}: the provider answered ${res.status}`, 'BAD_GATEWAY');
  }
  let text: string;
  try {
    text = await boundedText(res, name, MAX_RESULT_BYTES);
  } catch (err) {
    throw providerFailure(name, err);
  }
  if (res.status === 204 || text.trim() === '') return { status: 200, body: null };
  try {
    return { status: 200, body: JSON.parse(text) };
  } catch {
    throw refused(`${name}: the provider's answer is not JSON`, 'BAD_GATEWAY');
  }
}

/**
 * The external collections of a manifest with their connections, secret references resolved. An
 * external whose secret is missing does not stop the server: it is logged at start and answers 503
 * naming the variable, while everything else serves.
 * @param resolve - replaces `${secrets.NAME}` / `${env.NAME}` in a value; throws for a missing variable
 */
export function externalSources(
  externals: readonly ExternalCollection[],
  resolve: (value: string, where: string) => string,
  logger?: Logger,
): Map<string, ExternalSource> {
  const out = new Map<string, ExternalSource>();
  for (const e of externals) {
    const c = e.connection;
    const at = (key: string) => `external/${e.name}.json connection.${key}`;
    let connection: ServiceConnection;
    try {
      const resolved =
        c.type === 'oauth2'
          ? {
              ...c,
              tokenUrl: resolve(c.tokenUrl, at('tokenUrl')),
              clientId: resolve(c.clientId, at('clientId')),
              clientSecret: resolve(c.clientSecret, at('clientSecret')),
            }
          : c.type === 'apiKey'
            ? { ...c, value: resolve(c.value, at('value')) }
            : c;
      connection = serviceConnection(e.name, resolved);
    } catch (err) {
      const message = (err as Error).message;
      logger?.warn({ external: e.name }, `${message}: ${e.name} answers 503 until it is set`);
      connection = {
        headers: () => Promise.reject(new HttpError('SERVICE_UNAVAILABLE', `${e.name} is not configured: ${message}`)),
        renew: () => false,
      };
    }
    out.set(e.name, { external: e, connection });
  }
  return out;
}
