/**
 * @module The authentication middleware (SPEC §5.1–5.2): puts the request's `Caller` in
 * `res.locals.caller`. A bearer token (`Authorization: Bearer <jwt>`) wins; an invalid, expired or
 * tampered one is 401, never a silent downgrade to anonymous. Without it the `svc_access` cookie is
 * read; an invalid or expired cookie counts as no cookie (anonymous: the browser renews it through
 * `_refresh`). Cookie-authenticated unsafe requests must come from the server's own origin
 * (`requireSameOrigin`), which stops cross-site request forgery; bearer requests carry no ambient
 * authority and are not checked.
 */
import type { NextFunction, Request, Response } from 'express';
import { HttpError } from '../errors.js';
import { verifyAccessToken } from './access-tokens.js';
import type { AuthService } from './auth-service.js';
import { ACCESS_COOKIE, readCookie } from './cookies.js';
import { parse as parseCookie } from 'cookie';
import { ANONYMOUS } from './caller.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses (403) an unsafe request whose `Origin` (or, without one, `Referer`) names another origin
 * than the request's `Host`. A request with neither header is allowed: browsers send `Origin` on every
 * cross-origin POST, PUT, PATCH and DELETE, and non-browser clients send neither.
 * @throws HttpError FORBIDDEN (403)
 */
export function requireSameOrigin(req: Request): void {
  if (SAFE_METHODS.has(req.method) || isSameOrigin(req)) return;
  throw new HttpError('FORBIDDEN', 'cross-origin requests authenticated by cookie are refused; send a bearer token instead');
}

/** False when `Origin` (or, without one, `Referer`) names another origin than the request's `Host`; true when neither is sent. */
export function isSameOrigin(req: Request): boolean {
  const origin = req.headers.origin ?? req.headers.referer;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false; // "null" (sandboxed or privacy-sensitive contexts) or garbage
  }
}

/**
 * Express middleware: authenticates the request (see the module notes).
 * @throws HttpError UNAUTHORIZED (401) for a malformed `Authorization: Bearer` header or a bad token; FORBIDDEN (403) from `requireSameOrigin`
 */
export function authenticate(auth: AuthService) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const header = req.headers.authorization;
    if (header !== undefined && /^bearer(\s|$)/i.test(header)) {
      const token = /^bearer +([A-Za-z0-9_.-]+) *$/i.exec(header)?.[1];
      res.setHeader('WWW-Authenticate', 'Bearer error="invalid_token"'); // RFC 6750 §3, kept only on a 401
      if (!token) throw new HttpError('UNAUTHORIZED', 'the Authorization header must be "Bearer <access token>"');
      res.locals.caller = await verifyAccessToken(auth.keys, token, auth.issuer);
      res.removeHeader('WWW-Authenticate');
      res.locals.authenticatedBy = 'bearer';
      return next();
    }
    const cookie = readCookie(req, ACCESS_COOKIE);
    if (cookie) {
      try {
        res.locals.caller = await verifyAccessToken(auth.keys, cookie, auth.issuer);
        res.locals.authenticatedBy = 'cookie';
      } catch {
        // An expired or otherwise invalid cookie: anonymous.
      }
      if (res.locals.authenticatedBy === 'cookie') requireSameOrigin(req);
    }
    next();
  };
}

/** What authentication reads of a request, free of any HTTP framework. */
export interface CredentialInput {
  method: string;
  authorization?: string;
  cookie?: string;
  origin?: string;
  referer?: string;
  host?: string;
  scheme: 'http' | 'https';
}

/** The caller a request authenticated as, and how. */
export interface Authenticated {
  caller: import('./caller.js').Caller;
  via: 'bearer' | 'cookie' | 'none';
}

/**
 * Framework-free authentication (see the module notes).
 * @throws HttpError UNAUTHORIZED (401, with `WWW-Authenticate`) for a malformed or bad bearer token;
 *   FORBIDDEN (403) for a cross-origin cookie-authenticated unsafe request
 */
export async function authenticateCredentials(auth: AuthService, input: CredentialInput): Promise<Authenticated> {
  const header = input.authorization;
  if (header !== undefined && /^bearer(\s|$)/i.test(header)) {
    const token = /^bearer +([A-Za-z0-9_.-]+) *$/i.exec(header)?.[1];
    const challenge = { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
    if (!token) throw new HttpError('UNAUTHORIZED', 'the Authorization header must be "Bearer <access token>"', challenge);
    try {
      return { caller: await verifyAccessToken(auth.keys, token, auth.issuer), via: 'bearer' };
    } catch (err) {
      if (err instanceof HttpError) throw new HttpError(err.code, err.message, { ...challenge, cause: err.cause });
      throw err;
    }
  }
  const cookie = input.cookie ? parseCookie(input.cookie)[ACCESS_COOKIE] : undefined;
  if (cookie) {
    let caller;
    try {
      caller = await verifyAccessToken(auth.keys, cookie, auth.issuer);
    } catch {
      return { caller: ANONYMOUS, via: 'none' }; // an expired or otherwise invalid cookie: anonymous
    }
    if (!SAFE_METHODS.has(input.method)) {
      const origin = input.origin ?? input.referer;
      let same = origin === undefined;
      try {
        same ||= new URL(origin!).host === input.host;
      } catch { /* "null" or garbage: not same-origin */ }
      if (!same) throw new HttpError('FORBIDDEN', 'cross-origin requests authenticated by cookie are refused; send a bearer token instead');
    }
    return { caller, via: 'cookie' };
  }
  return { caller: ANONYMOUS, via: 'none' };
}
