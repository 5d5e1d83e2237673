/**
 * @module The Express routes of provider sign-in (DESIGN §11), mounted at the root beside `/login`:
 * `GET /login/<provider>` and `GET /login/<provider>/callback`, thin wrappers around
 * `runtime/auth/providers/login-flow.ts`. A name that is an account page (`signup`, `forgot`, …) is
 * left to the account routes (the generator refuses such provider names).
 */
import { Router, type Response } from 'express';
import type { AuthService } from '../auth/auth-service.js';
import { isAccountPage } from '../auth/login-account-pages.js';
import { finishProviderLogin, startProviderLogin } from '../auth/providers/login-flow.js';
import type { LoginPageResult } from '../auth/login-page.js';

function send(res: Response, result: LoginPageResult): void {
  res.set(result.headers);
  if (result.cookies.length > 0) res.append('Set-Cookie', result.cookies);
  if (result.redirect !== undefined) return res.redirect(303, result.redirect);
  res.status(result.status).type('html').send(result.html);
}

/** The raw query string of a request URL (`/login/x/callback?a=1` → `a=1`). */
const rawQuery = (url: string): string => {
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at + 1);
};

/**
 * The router of `/login/<provider>` and `/login/<provider>/callback`.
 * Source: DESIGN §11 "Providers".
 */
export function providerRouter(auth: AuthService): Router {
  const router = Router();
  router.get('/login/:provider', async (req, res, next) => {
    if (isAccountPage(req.params.provider)) return next();
    const returnUrl = typeof req.query.returnUrl === 'string' ? req.query.returnUrl : undefined;
    send(res, await startProviderLogin(auth, auth.providers, req.params.provider, returnUrl));
  });
  router.get('/login/:provider/callback', async (req, res) => {
    send(res, await finishProviderLogin(auth, auth.providers, req.params.provider, rawQuery(req.originalUrl), req.headers.cookie));
  });
  return router;
}
