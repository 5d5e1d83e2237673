/**
 * @module Authentication of a request, free of any HTTP framework (SPEC §5.1–5.2): from the
 * credentials a request carries (`CredentialInput`, built by whatever received it: the Express
 * middleware in `runtime/http/auth-routes.ts`, a WebSocket upgrade, an in-process client) to the
 * `Caller` behind it.
 *
 * - A bearer token (`Authorization: Bearer <jwt>`) wins; an invalid, expired or tampered one, or one
 *   whose identity was deleted or disabled, is 401 (never a silent downgrade to anonymous), and the
 *   error carries the `WWW-Authenticate: Bearer error="invalid_token"` header (RFC 6750 §3).
 * - Without it the `svc_access` cookie is read; an invalid or expired cookie counts as no cookie
 *   (anonymous: the browser renews it through `_refresh`).
 * - Cookie-authenticated unsafe requests must come from the server's own origin (`requireSameOrigin`),
 *   which stops cross-site request forgery; bearer requests carry no ambient authority and are not checked.
 * - The caller's roles and admin flag are the identity's current ones (`IdentityCache`, at most
 *   `IDENTITY_CACHE_TTL_MS` old), not the ones the token was issued with.
 */
import { HttpError } from '../errors.js';
import { verifyAccessToken } from './access-tokens.js';
import type { AuthService } from './auth-service.js';
import { ANONYMOUS, type Caller } from './caller.js';
import { ACCESS_COOKIE, readCookie } from './cookies.js';

/** The credentials and origin headers of one request, as the server received them. */
export interface CredentialInput {
  /** HTTP method, upper case (`GET`, `POST`…); a WebSocket upgrade is `GET`. */
  method: string;
  /** The `Authorization` header. */
  authorization?: string;
  /** The `Cookie` header. */
  cookie?: string;
  /** The `Origin` header. */
  origin?: string;
  /** The `Referer` header (used when `Origin` is absent). */
  referer?: string;
  /** The host (and port) of the request's public origin (`publicOriginOf`); undefined when none is known. */
  host?: string;
  /** The scheme of the request's public origin (`publicOriginOf`: svc.json `publicUrl`, a trusted proxy's `X-Forwarded-Proto`, or the socket). */
  scheme: 'http' | 'https';
}

/**
 * The credentials and origin headers of a `node:http` request (an Express request, a WebSocket
 * upgrade), with the request's public origin as `scheme` and `host` (`AuthService.publicOrigin`,
 * runtime/auth/public-origin.ts): what the origin checks compare `Origin` with.
 * @param auth - whose `publicOrigin` names the request's origin (svc.json `publicUrl`, `trustedProxies`)
 */
export function credentialInput(req: RequestLike, auth: Pick<AuthService, 'publicOrigin'>): CredentialInput {
  const h = req.headers;
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  // An origin as `URL.origin` writes it: `http://` or `https://`, then the host (and port), nothing after.
  const origin = auth.publicOrigin(req);
  const https = origin?.startsWith('https://') === true;
  return {
    method: req.method ?? 'GET',
    authorization: one(h.authorization),
    cookie: one(h.cookie),
    origin: one(h.origin),
    referer: one(h.referer),
    host: origin === undefined ? undefined : origin.slice(https ? 8 : 7),
    scheme: https ? 'https' : 'http',
  };
}

/** What `credentialInput` reads of a `node:http` request (described here: the auth core imports no HTTP module). */
export interface RequestLike {
  method?: string;
  headers: Record<string, string | string[] | undefined>;
  socket: unknown;
}

/** Who is calling, and what proved it (`none`: anonymous). */
export interface Authenticated {
  caller: Caller;
  via: 'bearer' | 'cookie' | 'none';
}

/** The header every 401 about a bearer token carries (RFC 6750 §3). */
export const BEARER_CHALLENGE: Readonly<Record<string, string>> = Object.freeze({ 'www-authenticate': 'Bearer error="invalid_token"' });

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const invalidToken = (message: string) => new HttpError('UNAUTHORIZED', message, { headers: { ...BEARER_CHALLENGE } });

/**
 * Verifies an access token (a bearer header's, a cookie's, or one from a WebSocket query string) and
 * answers its identity's current caller.
 * @throws HttpError UNAUTHORIZED (401, with `headers` = `BEARER_CHALLENGE`) for a malformed, tampered,
 *   expired, foreign or wrong-algorithm token, or one whose identity was deleted or disabled; the
 *   database's error (not a 401) when the identity lookup fails
 */
export async function verifyToken(auth: AuthService, token: string): Promise<Caller> {
  let claimed: Caller;
  try {
    claimed = await verifyAccessToken(auth.keys, token, auth.issuer);
  } catch (err) {
    throw invalidToken((err as Error).message);
  }
  const current = await auth.identities.get(claimed.kind, claimed.id!);
  if (!current) throw invalidToken('the identity of the access token was deleted or disabled');
  return current;
}

/**
 * False when `Origin` (or, without one, `Referer`) names another origin — scheme, host and port —
 * than the server's own (`scheme://host`); true when neither header is sent. `Origin: null` and
 * unparsable values are another origin.
 */
export function isSameOrigin(input: Pick<CredentialInput, 'origin' | 'referer' | 'host' | 'scheme'>): boolean {
  const claimed = input.origin ?? input.referer;
  if (claimed === undefined) return true;
  if (!input.host) return false;
  try {
    return new URL(claimed).origin === new URL(`${input.scheme}://${input.host}`).origin;
  } catch {
    return false; // "null" (sandboxed or privacy-sensitive contexts) or garbage
  }
}

/**
 * True when the request may carry the browser's session cookies: `isSameOrigin`, or its `Origin`
 * header names exactly one of `credentialed` (svc.json `cors.origins` with `cors.credentials: true`).
 */
export function isCookieOrigin(
  input: Pick<CredentialInput, 'origin' | 'referer' | 'host' | 'scheme'>,
  credentialed: ReadonlySet<string> = NO_ORIGINS,
): boolean {
  return isSameOrigin(input) || (input.origin !== undefined && credentialed.has(input.origin));
}

const NO_ORIGINS: ReadonlySet<string> = new Set();

/**
 * Refuses an unsafe request (not GET, HEAD, OPTIONS) that comes from another origin than the
 * server's own (`isSameOrigin`) and the `credentialed` ones (`isCookieOrigin`).
 * A request with neither `Origin` nor `Referer` is allowed: browsers send `Origin` on every
 * cross-origin POST, PUT, PATCH and DELETE, and non-browser clients send neither.
 * @throws HttpError FORBIDDEN (403)
 */
export function requireSameOrigin(
  input: Pick<CredentialInput, 'method' | 'origin' | 'referer' | 'host' | 'scheme'>,
  credentialed: ReadonlySet<string> = NO_ORIGINS,
): void {
  if (SAFE_METHODS.has(input.method.toUpperCase()) || isCookieOrigin(input, credentialed)) return;
  throw new HttpError('FORBIDDEN', 'cross-origin requests authenticated by cookie are refused; send a bearer token instead');
}

/**
 * Authenticates one request (see the module notes).
 * @returns the caller and how it was proved; `{ caller: ANONYMOUS, via: 'none' }` without valid credentials
 * @throws HttpError UNAUTHORIZED (401, `headers` = `BEARER_CHALLENGE`) for a malformed `Authorization:
 *   Bearer` header or a bad bearer token; FORBIDDEN (403) for a cookie-authenticated unsafe request from
 *   another origin
 */
export async function authenticateCredentials(auth: AuthService, input: CredentialInput): Promise<Authenticated> {
  const header = input.authorization;
  if (header !== undefined && /^bearer(\s|$)/i.test(header)) {
    const token = /^bearer +([A-Za-z0-9_.-]+) *$/i.exec(header)?.[1];
    if (!token) throw invalidToken('the Authorization header must be "Bearer <access token>"');
    return { caller: await verifyToken(auth, token), via: 'bearer' };
  }
  const cookie = readCookie(input.cookie, ACCESS_COOKIE);
  if (cookie) {
    let caller: Caller | null = null;
    try {
      caller = await verifyToken(auth, cookie);
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 401)) throw err;
      // An expired or otherwise invalid cookie: anonymous.
    }
    if (caller) {
      requireSameOrigin(input, auth.credentialedOrigins);
      return { caller, via: 'cookie' };
    }
  }
  return { caller: ANONYMOUS, via: 'none' };
}
