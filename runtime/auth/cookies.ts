/**
 * @module The session cookies of browsers (SPEC §5.2): `svc_access` (the access token, path `/`) and
 * `svc_refresh` (the refresh token, path `/api`, where `_refresh` and `_logout` read it). Both are
 * HttpOnly and SameSite=Lax, and Secure when svc.json `auth.secureCookies` is true.
 */
import type { Request, Response, CookieOptions } from 'express';
import { parse } from 'cookie';
import type { AuthService, Session } from './auth-service.js';

export const ACCESS_COOKIE = 'svc_access';
export const REFRESH_COOKIE = 'svc_refresh';
const REFRESH_PATH = '/api';

function options(auth: AuthService, path: string): CookieOptions {
  return { httpOnly: true, sameSite: 'lax', secure: auth.secureCookies, path };
}

/** Sets both cookies of a session; they live as long as their tokens. */
export function setSessionCookies(res: Response, auth: AuthService, session: Session): void {
  res.cookie(ACCESS_COOKIE, session.body.access_token, { ...options(auth, '/'), maxAge: session.body.expires_in * 1000 });
  res.cookie(REFRESH_COOKIE, session.body.refresh_token, { ...options(auth, REFRESH_PATH), expires: session.refreshExpiresAt });
}

/** Clears both cookies. */
export function clearSessionCookies(res: Response, auth: AuthService): void {
  res.clearCookie(ACCESS_COOKIE, options(auth, '/'));
  res.clearCookie(REFRESH_COOKIE, options(auth, REFRESH_PATH));
}

/** The value of one request cookie, or undefined. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  return parse(header)[name] || undefined;
}
