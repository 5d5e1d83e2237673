/**
 * @module The session cookies of browsers (SPEC §5.2): `svc_access` (the access token, path `/`) and
 * `svc_refresh` (the refresh token, path `/api`, where `_refresh` and `_logout` read it). Both are
 * HttpOnly and SameSite=Lax, and Secure when svc.json `auth.secureCookies` is true or the request's
 * public origin is https (svc.json `publicUrl`, a trusted proxy's `X-Forwarded-Proto`: public-origin.ts);
 * with svc.json `cors.credentials` (pages of other sites send them) SameSite=None and always Secure. Framework-free:
 * these functions answer `Set-Cookie` header values and read a `Cookie` header; the HTTP layer
 * appends the values to its response.
 */
import { parse, serialize, type SerializeOptions } from 'cookie';
import type { AuthService, Session } from './auth-service.js';

export const ACCESS_COOKIE = 'svc_access';
export const REFRESH_COOKIE = 'svc_refresh';
const REFRESH_PATH = '/api';

function options(auth: AuthService, path: string, https: boolean): SerializeOptions {
  const crossSite = auth.credentialedOrigins.size > 0;
  return { httpOnly: true, sameSite: crossSite ? 'none' : 'lax', secure: auth.secureCookies || https || crossSite, path };
}

/**
 * The `Set-Cookie` values of a session's two cookies; they live as long as their tokens.
 * @param https - whether the request's public origin is https (`CredentialInput.scheme`): the cookies are then `Secure`
 */
export function sessionCookies(auth: AuthService, session: Session, https = false): string[] {
  const ttl = session.body.expires_in; // s
  return [
    serialize(ACCESS_COOKIE, session.body.access_token, { ...options(auth, '/', https), maxAge: ttl, expires: new Date(Date.now() + ttl * 1000) }),
    serialize(REFRESH_COOKIE, session.body.refresh_token, { ...options(auth, REFRESH_PATH, https), expires: session.refreshExpiresAt }),
  ];
}

/**
 * The `Set-Cookie` values that clear both cookies.
 * @param https - as `sessionCookies`
 */
export function clearedCookies(auth: AuthService, https = false): string[] {
  const expired = new Date(1);
  return [
    serialize(ACCESS_COOKIE, '', { ...options(auth, '/', https), expires: expired }),
    serialize(REFRESH_COOKIE, '', { ...options(auth, REFRESH_PATH, https), expires: expired }),
  ];
}

/** The value of cookie `name` in a `Cookie` request header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  return parse(header)[name] || undefined;
}
