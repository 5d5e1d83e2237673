/**
 * @module The authentication endpoints of SPEC §4.6 with the bodies of DESIGN §4 "Auth details":
 * `_auth` (sign-in with a service account or a password: token body, and cookies for same-origin
 * callers), `_refresh` (renews the cookies from the refresh cookie), `_logout` (revokes the refresh
 * token's family and clears the cookies), `_me`, `_webAppConfig`. The OAuth 2.0 `_token` endpoint is in
 * `token-route.ts`.
 */
import express, { Router, type Request, type Response } from 'express';
import { HttpError, type ErrorDetail } from '../errors.js';
import { callerOf, type Caller } from './caller.js';
import { continueSession, startSession, type AuthService } from './auth-service.js';
import { isSameOrigin, requireSameOrigin } from './authenticate.js';
import { clearSessionCookies, readCookie, REFRESH_COOKIE, setSessionCookies } from './cookies.js';
import { checkClientSecret, checkPassword } from './identities.js';
import { attemptKey } from './rate-limit.js';
import { revokeRefreshToken } from './refresh-tokens.js';

/** Longest accepted credential field, in characters. */
const MAX_FIELD = 1000;

/** Reads required string fields of a credentials body. @throws HttpError VALIDATION_FAILED naming each missing field */
export function credentialFields<K extends string>(body: unknown, names: readonly K[]): Record<K, string> {
  const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const details: ErrorDetail[] = names
    .filter((n) => typeof b[n] !== 'string' || b[n] === '' || (b[n] as string).length > MAX_FIELD)
    .map((n) => ({ path: `/${n}`, message: `${n} is required (a non-empty string of at most ${MAX_FIELD} characters)` }));
  if (details.length > 0) throw new HttpError('VALIDATION_FAILED', details.map((d) => d.message).join('; '), { details });
  return Object.fromEntries(names.map((n) => [n, b[n]])) as Record<K, string>;
}

/**
 * Refuses while `subject` (`client:<id>`, `user:<name>`) is locked out from the request's address.
 * @returns the limiter key of the attempt
 * @throws HttpError RATE_LIMITED (429, with `Retry-After` in seconds set on `res`)
 */
export function checkLockout(auth: AuthService, req: Request, res: Response, subject: string): string {
  const key = attemptKey(subject, req.socket.remoteAddress);
  const wait = auth.limiter.retryAfterSeconds(key);
  if (wait > 0) {
    res.setHeader('Retry-After', String(wait));
    throw new HttpError('RATE_LIMITED', `too many failed attempts; try again in ${wait} seconds`);
  }
  return key;
}

/**
 * Checks credentials under the failure limiter.
 * @returns the caller, or null for wrong credentials (counted as a failure)
 * @throws HttpError RATE_LIMITED (429) while the key is locked out (see `checkLockout`)
 */
export async function limitedCheck(auth: AuthService, req: Request, res: Response, subject: string, check: () => Promise<Caller | null>): Promise<Caller | null> {
  const key = checkLockout(auth, req, res, subject);
  const caller = await check();
  if (caller) auth.limiter.reset(key);
  else auth.limiter.fail(key);
  return caller;
}

/**
 * The router of `_auth`, `_refresh`, `_logout`, `_me` and `_webAppConfig` (mounted under `/api`).
 * Source: SPEC §4.6, §5; DESIGN §4 "Auth details".
 */
export function authRouter(auth: AuthService): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  router.post('/_auth', form, async (req, res) => {
    const authority = (req.body as Record<string, unknown> | undefined)?.authority;
    let caller: Caller | null;
    let clientId: string;
    if (typeof authority === 'string' && authority.toLowerCase() === 'serviceaccount') {
      const f = credentialFields(req.body, ['clientId', 'clientSecret']);
      clientId = f.clientId;
      caller = await limitedCheck(auth, req, res, `client:${f.clientId}`, () => checkClientSecret(auth.db, f.clientId, f.clientSecret));
    } else if (authority === 'password') {
      const f = credentialFields(req.body, ['username', 'password']);
      clientId = f.username;
      caller = await limitedCheck(auth, req, res, `user:${f.username}`, () => checkPassword(auth.db, f.username, f.password));
    } else {
      throw new HttpError('VALIDATION_FAILED', 'authority must be "serviceaccount" (with clientId, clientSecret) or "password" (with username, password)', { details: [{ path: '/authority', message: 'must be "serviceaccount" or "password"' }] });
    }
    if (!caller) throw new HttpError('UNAUTHORIZED', 'the credentials are not valid');
    const session = await startSession(auth, caller, clientId);
    // Cookies only for same-origin (or non-browser) callers: a cross-site page must not sign a browser in.
    if (isSameOrigin(req)) setSessionCookies(res, auth, session);
    res.setHeader('Cache-Control', 'no-store');
    res.json(session.body);
  });

  router.post('/_refresh', async (req, res) => {
    requireSameOrigin(req);
    const token = readCookie(req, REFRESH_COOKIE);
    if (!token) throw new HttpError('UNAUTHORIZED', 'no refresh cookie: sign in again');
    const session = await continueSession(auth, token, null);
    if ('failure' in session) {
      clearSessionCookies(res, auth);
      auth.logger.info({ reqId: res.locals.reqId, reason: session.failure }, 'refresh refused');
      throw new HttpError('UNAUTHORIZED', 'the session has ended: sign in again');
    }
    setSessionCookies(res, auth, session);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ expires_in: session.body.expires_in });
  });

  router.post('/_logout', async (req, res) => {
    requireSameOrigin(req);
    const token = readCookie(req, REFRESH_COOKIE);
    if (token) await revokeRefreshToken(auth.db, token);
    clearSessionCookies(res, auth);
    res.status(204).end();
  });

  router.get('/_me', (_req, res) => {
    const caller = callerOf(res);
    if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', '_me requires authentication');
    res.json({ id: caller.id, username: caller.username, roles: caller.roles });
  });

  router.get('/_webAppConfig', (_req, res) => {
    res.json({ loginUrl: '/login', loginMethods: ['password'], refreshUrl: '/api/_refresh', logoutUrl: '/api/_logout' });
  });

  for (const path of ['/_auth', '/_refresh', '/_logout', '/_me', '/_webAppConfig']) {
    router.all(path, (req) => {
      throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on ${req.path}`);
    });
  }
  return router;
}
