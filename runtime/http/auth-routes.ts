/**
 * @module The Express side of authentication: the middleware that authenticates every `/api` request
 * (through the framework-free `authenticateCredentials`), and the routes of SPEC §4.6 — `_auth`,
 * `_refresh`, `_logout`, `_me`, `_webAppConfig`, `_token` and `/login` — each a thin wrapper around
 * the functions of `runtime/auth/` (`sign-in.ts`, `token-grant.ts`, `login-page.ts`), which hold the
 * logic. Errors thrown here carry their response headers in `HttpError.headers` (set by the error
 * middleware of `app.ts`).
 */
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { HttpError } from '../errors.js';
import type { AuthService } from '../auth/auth-service.js';
import { authenticateCredentials, credentialInput, isCookieOrigin, requireSameOrigin } from '../auth/authenticate.js';
import { callerOf } from '../auth/caller.js';
import { clearedCookies, readCookie, REFRESH_COOKIE, sessionCookies } from '../auth/cookies.js';
import { endSession, meBody, renewSession, signIn, webAppConfig } from '../auth/sign-in.js';
import { oauthError, tokenGrant } from '../auth/token-grant.js';
import { loginForm, submitLogin, type LoginPageResult } from '../auth/login-page.js';
import { accountForm, isAccountPage, submitAccountForm } from '../auth/login-account-pages.js';

const form = express.urlencoded({ extended: false, limit: '16kb' });

/**
 * Express middleware: authenticates the request and stores the caller in `res.locals.caller` (read
 * with `callerOf`) and how it was proved in `res.locals.authenticatedBy`.
 * @throws HttpError UNAUTHORIZED (401, with `WWW-Authenticate` in `headers`), FORBIDDEN (403) — see `authenticateCredentials`
 */
export function authenticate(auth: AuthService) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const { caller, via } = await authenticateCredentials(auth, credentialInput(req, auth));
    res.locals.caller = caller;
    if (via !== 'none') res.locals.authenticatedBy = via;
    next();
  };
}

function notAllowed(router: Router, paths: string[]): void {
  for (const path of paths) {
    router.all(path, (req) => {
      throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on ${req.path}`);
    });
  }
}

/**
 * The router of `_auth`, `_refresh`, `_logout`, `_me` and `_webAppConfig` (mounted under `/api`,
 * after `authenticate`).
 * Source: SPEC §4.6, §5; DESIGN §4 "Auth details".
 */
export function authRouter(auth: AuthService): Router {
  const router = Router();
  router.post('/_auth', form, async (req, res) => {
    const session = await signIn(auth, req.body, auth.clientAddress(req));
    // Cookies only for same-origin (or non-browser) callers, and the origins of svc.json `cors` with
    // `credentials`: another site's page must not sign a browser in.
    const input = credentialInput(req, auth);
    if (isCookieOrigin(input, auth.credentialedOrigins)) res.append('Set-Cookie', sessionCookies(auth, session, input.scheme === 'https'));
    res.setHeader('Cache-Control', 'no-store');
    res.json(session.body);
  });

  router.post('/_refresh', async (req, res) => {
    const input = credentialInput(req, auth);
    requireSameOrigin(input, auth.credentialedOrigins);
    const https = input.scheme === 'https';
    const token = readCookie(req.headers.cookie, REFRESH_COOKIE);
    if (!token) throw new HttpError('UNAUTHORIZED', 'no refresh cookie: sign in again');
    const session = await renewSession(auth, token, res.locals.reqId as string);
    if (!session) {
      res.append('Set-Cookie', clearedCookies(auth, https));
      throw new HttpError('UNAUTHORIZED', 'the session has ended: sign in again');
    }
    res.append('Set-Cookie', sessionCookies(auth, session, https));
    res.setHeader('Cache-Control', 'no-store');
    res.json({ expires_in: session.body.expires_in });
  });

  // A browser signs out with its refresh cookie (same origin only); a bearer client with the
  // `refresh_token` of its body (JSON or form), which needs no origin check: it is no ambient authority.
  router.post('/_logout', form, async (req, res) => {
    const cookieToken = readCookie(req.headers.cookie, REFRESH_COOKIE);
    const input = credentialInput(req, auth);
    if (cookieToken) requireSameOrigin(input, auth.credentialedOrigins);
    const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
    const bodyToken = typeof body.refresh_token === 'string' && body.refresh_token.length <= 1000 ? body.refresh_token : undefined;
    await endSession(auth, [cookieToken, bodyToken]);
    res.append('Set-Cookie', clearedCookies(auth, input.scheme === 'https'));
    res.status(204).end();
  });

  router.get('/_me', (_req, res) => {
    res.json(meBody(callerOf(res)));
  });
  router.get('/_webAppConfig', (_req, res) => {
    res.json(webAppConfig(auth));
  });
  notAllowed(router, ['/_auth', '/_refresh', '/_logout', '/_me', '/_webAppConfig']);
  return router;
}

/**
 * The `_token` router (mounted under `/api`); pair it with `oauthErrors` on `/api/_token`.
 * Source: SPEC §4.6, §5.4; DESIGN §4 "Auth details" (never sets cookies, form and JSON bodies).
 */
export function tokenRouter(auth: AuthService): Router {
  const router = Router();
  router.post('/_token', form, async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    res.json(
      await tokenGrant(auth, req.body, {
        authorization: req.headers.authorization,
        remoteAddress: auth.clientAddress(req),
        reqId: res.locals.reqId as string,
      }),
    );
  });
  notAllowed(router, ['/_token']);
  return router;
}

/** Error middleware for `/api/_token`: RFC 6749 bodies (see `oauthError`). */
export function oauthErrors(auth: AuthService) {
  return (err: unknown, _req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    const answer = oauthError(err, auth.logger, res.locals.reqId as string);
    if (!answer) return next(err);
    res.set(answer.headers);
    res.status(answer.status).json(answer.body);
  };
}

/** Writes a `LoginPageResult` (the login, account and provider pages): headers, cookies, then the redirect or the HTML. */
export function sendLoginPage(res: Response, result: LoginPageResult): void {
  res.set(result.headers);
  if (result.cookies.length > 0) res.append('Set-Cookie', result.cookies);
  if (result.redirect !== undefined) return res.redirect(303, result.redirect);
  res.status(result.status).type('html').send(result.html);
}

/**
 * The `/login` router (mounted at the root, not under `/api`), with the account pages under it.
 * Source: SPEC §4.6 (`/login`), §5.2 (cookies); DESIGN §11.
 */
export function loginRouter(auth: AuthService): Router {
  const router = Router();
  router.get('/login', (req, res) => {
    sendLoginPage(res, loginForm(auth, req.query.returnUrl));
  });
  router.post('/login', form, async (req, res) => {
    sendLoginPage(res, await submitLogin(auth, req.body, { ...credentialInput(req, auth), remoteAddress: auth.clientAddress(req) }));
  });
  // The account pages of DESIGN §11: /login/signup, /login/forgot, /login/reset, /login/verify.
  router.get('/login/:page', (req, res, next) => {
    if (!isAccountPage(req.params.page)) return next();
    sendLoginPage(res, accountForm(auth, req.params.page, req.query));
  });
  router.post('/login/:page', form, async (req, res, next) => {
    if (!isAccountPage(req.params.page)) return next();
    sendLoginPage(res, await submitAccountForm(auth, req.params.page, req.body, { ...credentialInput(req, auth), remoteAddress: auth.clientAddress(req) }));
  });
  return router;
}
