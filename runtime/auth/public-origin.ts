/**
 * @module The public origin of a request (issue 32 §1): the one answer to "which scheme://host did
 * the browser reach this app at", for everything that compares with it or hands it out — the origin
 * checks of cookie-authenticated requests and of the hosted forms (`authenticate.ts`), the `Secure`
 * flag of cookies, and the URLs `_rt/ws`, `_rt/hub` and the SignalR negotiate answer. Mail links,
 * OpenID redirect URIs and the OpenAPI `servers` use `publicUrl` (they must not follow a request's
 * `Host`, which a client chooses).
 *
 * - svc.json `publicUrl` set: that origin, for every request (a client cannot change it).
 * - Otherwise, a request whose TCP peer is one of svc.json `trustedProxies`: the scheme of
 *   `X-Forwarded-Proto` and the host of `X-Forwarded-Host` (the first value of each, as the proxy
 *   nearest the client set it), each falling back to the connection's when absent or malformed.
 * - Otherwise the connection's: `https` on a TLS socket, else `http`, and the `Host` header. A client
 *   that is not a trusted proxy changes nothing by sending the forwarded headers.
 */
import type { AppSettings } from '../contract/settings.js';
import type { TrustedPeer } from './client-address.js';

/** What `publicOriginOf` reads of a `node:http` request (an HTTP request or a WebSocket upgrade). */
export interface OriginRequest {
  headers: Record<string, string | string[] | undefined>;
  socket: { remoteAddress?: string; encrypted?: boolean } | unknown;
}

/** The first comma-separated value of a header (the one the proxy nearest the client wrote), trimmed. */
function firstValue(v: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(v) ? v[0] : v;
  const first = raw?.split(',')[0]?.trim();
  return first ? first : undefined;
}

/** Origins of recent `scheme://host` pairs: every request names its host, and most name the same few. */
const origins = new Map<string, string | undefined>();
/** Entries before `origins` starts again (a client choosing random hosts cannot grow it). */
const MAX_ORIGINS = 256;

/** `scheme://host` as `URL.origin` writes it (default port dropped, host lower case), or undefined when `host` is no host. */
function originFrom(scheme: 'http' | 'https', host: string): string | undefined {
  const key = `${scheme}://${host}`;
  if (origins.has(key)) return origins.get(key);
  let origin: string | undefined;
  if (!/[/\\?#@\s]/.test(host)) {
    try {
      const url = new URL(key);
      origin = url.origin === 'null' ? undefined : url.origin;
    } catch {
      origin = undefined;
    }
  }
  if (origins.size >= MAX_ORIGINS) origins.clear();
  origins.set(key, origin);
  return origin;
}

/**
 * The public origin of a request (see the module notes): `https://club.example`, without a trailing
 * slash, default ports dropped.
 * @param req - the request (or WebSocket upgrade)
 * @param settings - the manifest's settings (svc.json `publicUrl`, already normalised by the generator)
 * @param trusted - whether the TCP peer is one of svc.json `trustedProxies` (`AuthService.trustedPeer`)
 * @returns the origin; undefined when nothing names a host (no `publicUrl`, no usable `Host`)
 */
export function publicOriginOf(req: OriginRequest, settings: Pick<AppSettings, 'publicUrl'>, trusted: TrustedPeer): string | undefined {
  if (settings.publicUrl) return settings.publicUrl;
  let scheme: 'http' | 'https' = (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
  let host = firstValue(req.headers.host);
  if (trusted(req as Parameters<TrustedPeer>[0])) {
    const proto = firstValue(req.headers['x-forwarded-proto'])?.toLowerCase();
    if (proto === 'http' || proto === 'https') scheme = proto;
    const forwardedHost = firstValue(req.headers['x-forwarded-host']);
    if (forwardedHost !== undefined && originFrom(scheme, forwardedHost) !== undefined) host = forwardedHost;
  }
  return host === undefined ? undefined : originFrom(scheme, host);
}
