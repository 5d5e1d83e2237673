/**
 * @module The Express routes of provider sign-in (DESIGN §11), mounted at the root beside `/login`:
 * `GET /login/<provider>` and `GET /login/<provider>/callback`, thin wrappers around
 * `runtime/auth/providers/login-flow.ts`. A name that is an account page (`signup`, `forgot`, …) is
 * left to the account routes (the generator refuses such provider names).
 */
import { Router } from 'express';
import type { AuthService } from '../auth/auth-service.js';
import { isAccountPage } from '../auth/login-account-pages.js';
import { finishProviderLogin, startProviderLogin } from '../auth/providers/login-flow.js';
import { sendLoginPage } from './auth-routes.js';

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
    sendLoginPage(res, await startProviderLogin(auth, auth.providers, req.params.provider, returnUrl));
  });
  router.get('/login/:provider/callback', async (req, res) => {
    sendLoginPage(res, await finishProviderLogin(auth, auth.providers, req.params.provider, rawQuery(req.originalUrl), req.headers.cookie));
  });
  return router;
}
