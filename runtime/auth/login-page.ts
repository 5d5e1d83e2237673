/**
 * @module The hosted login page `/login` (SPEC §4.6; its behaviour is ours, SPEC §5.10), free of any
 * HTTP framework (the route is in `runtime/http/auth-routes.ts`): a server-rendered HTML form that
 * works without JavaScript. `GET /login?returnUrl=/app` shows it; the form POSTs username and
 * password back; success sets the session cookies and redirects (303) to `returnUrl` when it is a
 * same-origin path, else shows a signed-in page; failure shows the form again with the error (401, or
 * 429 while locked out, 403 until the user's e-mail address is verified). The POST must come from this
 * origin (no login CSRF). Under the form: "Create account" and "Forgot password" (DESIGN §11, pages
 * in `login-account-pages.ts`). Above the form: one "Continue with <Name>" per identity provider.
 */
import { HttpError } from '../errors.js';
import { startSession, type AuthService } from './auth-service.js';
import { isSameOrigin, type CredentialInput } from './authenticate.js';
import { sessionCookies } from './cookies.js';
import { checkPassword } from './identities.js';
import { limitedCheck } from './limited-check.js';
import { requireVerifiedEmail } from './email-verified.js';

const BASE = 'http://svc.invalid';

/**
 * `value` as a same-origin path (`/app?x=1#y`), or null when it could leave the origin: absolute URLs,
 * scheme-relative `//host`, backslashes (`/\host`, which browsers read as `//host`), control characters
 * (URL parsers drop tabs and newlines: `/\t/host`), anything that does not resolve on this origin, and
 * paths whose dot segments normalise to `//host` (`/.//host`, `/%2e%2e//host`, `/x/..//host`): the
 * answer is the normalised URL's path, query and fragment, never starting with `//` or `/\`.
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
  if (url.origin !== BASE) return null;
  const path = url.pathname + url.search + url.hash;
  return path.startsWith('//') || path.startsWith('/\\') ? null : path;
}

/** A small inline icon, so browsers do not ask for `/favicon.ico` (a 404 on every load). */
export const ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%23334'/%3E%3Ctext x='8' y='12' font-size='10' text-anchor='middle' fill='white' font-family='sans-serif'%3Es%3C/text%3E%3C/svg%3E";

/** `s` with `& < > " '` as character references, for HTML text and attribute values. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A whole HTML page with the login page's style. */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="icon" href="${ICON}">
<style>body{font-family:system-ui,sans-serif;max-width:22rem;margin:4rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}
input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#a00}
a.provider{display:block;padding:.5rem 1rem;border:1px solid #888;border-radius:4px;text-align:center;text-decoration:none;color:inherit}</style>
</head><body>${body}</body></html>
`;
}

/** The links under the sign-in form: "Create account" when sign-up is on, "Forgot password" when mail is configured (DESIGN §11). */
function accountLinks(auth: AuthService): string {
  const links = [
    auth.signup.enabled ? '<a href="/login/signup">Create account</a>' : '',
    auth.mail.mailer.configured ? '<a href="/login/forgot">Forgot password</a>' : '',
  ].filter(Boolean);
  return links.length > 0 ? `<p>${links.join(' · ')}</p>` : '';
}

/**
 * One "Continue with <Name>" link per provider of `auth.providers` (DESIGN §11), carrying `returnUrl`.
 * Links, not forms: the page's CSP `form-action 'self'` would stop a form's redirect to the provider.
 */
function providerButtons(auth: AuthService, returnUrl: string | null): string {
  const query = returnUrl ? `?returnUrl=${encodeURIComponent(returnUrl)}` : '';
  const links = [...auth.providers.values()].map(
    (p) => `<p><a class="provider" href="/login/${escapeHtml(p.name)}${escapeHtml(query)}">Continue with ${escapeHtml(p.displayName)}</a></p>`,
  );
  return links.length > 0 ? `<div class="providers">${links.join('')}</div><p>or sign in with your username:</p>` : '';
}

function form(auth: AuthService, options: { error?: string; username?: string; returnUrl: string | null }): string {
  const appName = auth.manifest.name;
  const error = options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>` : '';
  const returnField = options.returnUrl ? `<input type="hidden" name="returnUrl" value="${escapeHtml(options.returnUrl)}">` : '';
  return page(
    `Sign in to ${appName}`,
    `<h1>Sign in to ${escapeHtml(appName)}</h1>${error}${providerButtons(auth, options.returnUrl)}
<form method="post" action="/login">${returnField}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required value="${escapeHtml(options.username ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>${accountLinks(auth)}`,
  );
}

/** Response headers of every page: no framing, no scripts, no caching, no referrer off the origin. */
const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'same-origin',
});

/**
 * What the HTTP layer answers for `/login`: an HTML page with `status` and `headers`, or a 303 to
 * `redirect`; `cookies` are `Set-Cookie` values to append either way.
 */
export interface LoginPageResult {
  status: number;
  headers: Record<string, string>;
  html?: string;
  redirect?: string;
  cookies: string[];
}

/** An HTML answer with the page headers (and `extra`). */
export const htmlResult = (status: number, html: string, extra: Record<string, string> = {}): LoginPageResult => ({
  status,
  headers: { ...PAGE_HEADERS, ...extra },
  html,
  cookies: [],
});

/** `GET /login`: the form, keeping `returnUrl` (a query parameter) only when it is safe. */
export function loginForm(auth: AuthService, returnUrl: unknown): LoginPageResult {
  return htmlResult(200, form(auth, { returnUrl: safeReturnUrl(returnUrl) }));
}

/**
 * `POST /login`: checks the form (`username`, `password`, `returnUrl`) sent from `request`.
 * Source: SPEC §4.6 (`/login`), §5.2 (cookies); issue "Authentication" (`/login` requirements).
 */
export async function submitLogin(auth: AuthService, body: unknown, request: CredentialInput & { remoteAddress?: string }): Promise<LoginPageResult> {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const returnUrl = safeReturnUrl(b.returnUrl);
  const username = typeof b.username === 'string' ? b.username.slice(0, 200) : '';
  const password = typeof b.password === 'string' ? b.password.slice(0, 1000) : '';
  if (!isSameOrigin(request)) return htmlResult(403, form(auth, { error: 'This sign-in form was sent from another site.', returnUrl }));
  if (!username || !password) return htmlResult(400, form(auth, { error: 'Enter your username and password.', username, returnUrl }));
  let caller;
  try {
    caller = await limitedCheck(auth, `user:${username}`, request.remoteAddress, () => checkPassword(auth.db, username, password));
  } catch (err) {
    if (err instanceof HttpError && err.code === 'RATE_LIMITED') {
      const wait = err.headers?.['retry-after'] ?? '';
      return htmlResult(429, form(auth, { error: `Too many failed attempts. Try again in ${wait} seconds.`, username, returnUrl }), { 'retry-after': wait });
    }
    throw err;
  }
  if (!caller) return htmlResult(401, form(auth, { error: 'Wrong username or password.', username, returnUrl }));
  try {
    await requireVerifiedEmail(auth, caller);
  } catch (err) {
    if (err instanceof HttpError)
      return htmlResult(err.status, form(auth, { error: 'Confirm your e-mail address first: open the link in the mail we sent you.', username, returnUrl }));
    throw err;
  }
  const cookies = sessionCookies(auth, await startSession(auth, caller, username), request.scheme === 'https');
  if (returnUrl) return { status: 303, headers: { 'Cache-Control': 'no-store' }, redirect: returnUrl, cookies };
  return {
    ...htmlResult(
      200,
      page(
        `Signed in to ${auth.manifest.name}`,
        `<h1>Signed in</h1><p>You are signed in to ${escapeHtml(auth.manifest.name)} as ${escapeHtml(caller.username ?? '')}.</p>`,
      ),
    ),
    cookies,
  };
}
