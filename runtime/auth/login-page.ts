/**
 * @module The hosted login page `/login` (SPEC §4.6; its behaviour is ours, SPEC §5.10): a
 * server-rendered HTML form that works without JavaScript. `GET /login?returnUrl=/app` shows it;
 * the form POSTs username and password back; success sets the session cookies and redirects (303) to
 * `returnUrl` when it is a same-origin path, else shows a signed-in page; failure shows the form again
 * with the error (401, or 429 while locked out). The POST must come from this origin (no login CSRF).
 */
import express, { Router, type Request, type Response } from 'express';
import { HttpError } from '../errors.js';
import { startSession, type AuthService } from './auth-service.js';
import { isSameOrigin } from './authenticate.js';
import { setSessionCookies } from './cookies.js';
import { checkPassword } from './identities.js';
import { limitedCheck } from './auth-routes.js';

const BASE = 'http://svc.invalid';

/**
 * `value` as a same-origin path (`/app?x=1#y`), or null when it could leave the origin: absolute URLs,
 * scheme-relative `//host`, backslashes (`/\host`, which browsers read as `//host`), control characters
 * (URL parsers drop tabs and newlines: `/\t/host`), or anything that does not resolve on this origin.
 */
export function safeReturnUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2000) return null;
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\') || /[\u0000-\u001f\u007f]/.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return null;
  }
  return url.origin === BASE ? url.pathname + url.search + url.hash : null;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:22rem;margin:4rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}
input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#a00}</style>
</head><body>${body}</body></html>
`;
}

function form(appName: string, options: { error?: string; username?: string; returnUrl: string | null }): string {
  const error = options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>` : '';
  const returnField = options.returnUrl ? `<input type="hidden" name="returnUrl" value="${escapeHtml(options.returnUrl)}">` : '';
  return page(`Sign in to ${appName}`, `<h1>Sign in to ${escapeHtml(appName)}</h1>${error}
<form method="post" action="/login">${returnField}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required value="${escapeHtml(options.username ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>`);
}

function sendHtml(res: Response, status: number, html: string): void {
  res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.status(status).type('html').send(html);
}

/**
 * The `/login` router (mounted at the root, not under `/api`).
 * Source: SPEC §4.6 (`/login`), §5.2 (cookies); issue "Authentication" (`/login` requirements).
 */
export function loginRouter(auth: AuthService): Router {
  const router = Router();
  const name = auth.manifest.name;

  router.get('/login', (req, res) => {
    sendHtml(res, 200, form(name, { returnUrl: safeReturnUrl(req.query.returnUrl) }));
  });

  router.post('/login', express.urlencoded({ extended: false, limit: '16kb' }), async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const returnUrl = safeReturnUrl(body.returnUrl);
    const username = typeof body.username === 'string' ? body.username.slice(0, 200) : '';
    const password = typeof body.password === 'string' ? body.password.slice(0, 1000) : '';
    if (!isSameOrigin(req)) return sendHtml(res, 403, form(name, { error: 'This sign-in form was sent from another site.', returnUrl }));
    if (!username || !password) return sendHtml(res, 400, form(name, { error: 'Enter your username and password.', username, returnUrl }));
    let caller;
    try {
      caller = await limitedCheck(auth, req, res, `user:${username}`, () => checkPassword(auth.db, username, password));
    } catch (err) {
      if (err instanceof HttpError && err.code === 'RATE_LIMITED') return sendHtml(res, 429, form(name, { error: `Too many failed attempts. Try again in ${String(res.getHeader('Retry-After'))} seconds.`, username, returnUrl }));
      throw err;
    }
    if (!caller) return sendHtml(res, 401, form(name, { error: 'Wrong username or password.', username, returnUrl }));
    setSessionCookies(res, auth, await startSession(auth, caller, username));
    if (returnUrl) return res.redirect(303, returnUrl);
    sendHtml(res, 200, page(`Signed in to ${name}`, `<h1>Signed in</h1><p>You are signed in to ${escapeHtml(name)} as ${escapeHtml(caller.username ?? '')}.</p>`));
  });
  return router;
}
