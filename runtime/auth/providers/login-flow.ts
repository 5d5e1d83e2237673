/**
 * @module Signing in with a provider in a browser (DESIGN §11), free of any HTTP framework (routes in
 * `runtime/http/provider-routes.ts`): `GET /login/<provider>?returnUrl=` keeps state, nonce and a
 * PKCE verifier in the signed `svc_login` cookie and redirects (303) to the provider;
 * `GET /login/<provider>/callback` checks the cookie's state against the query's, lets the provider
 * module check nonce and PKCE while it exchanges the code, finds or creates the user (`link.ts`),
 * refuses a disabled one, sets the session cookies of SPEC §5 exactly as the `/login` form does and
 * redirects (303) to the kept same-origin `returnUrl` (`/` when there is none). Every refusal is an
 * HTML page with its status (400 denied/tampered/expired, 403 disabled, 404 unknown provider, 502
 * provider unreachable) that offers to start again; none sets session cookies.
 */
import * as client from 'openid-client';
import type { AuthService } from '../auth-service.js';
import { startSession } from '../auth-service.js';
import { sessionCookies } from '../cookies.js';
import { escapeHtml, htmlResult, page, safeReturnUrl, type LoginPageResult } from '../login-page.js';
import { clearedLoginState, loginStateCookie, readLoginState } from './login-state.js';
import { userForIdentity } from './link.js';
import { signedInUser } from '../identities.js';
import { ProviderError, type AuthorizationChecks, type IdentityProvider } from './types.js';

/** The providers of an app by name (`createProviders`). */
export type Providers = ReadonlyMap<string, IdentityProvider>;

/** The callback URL to register at a provider: `<public origin>/login/<name>/callback`. */
export const callbackUrl = (auth: AuthService, name: string): string => `${auth.mail.origin().replace(/\/$/, '')}/login/${name}/callback`;

function errorPage(auth: AuthService, status: number, message: string, retry: string | null, cookies: string[] = []): LoginPageResult {
  const again = retry
    ? `<p><a href="${escapeHtml(retry)}">Try again</a> · <a href="/login">Sign in another way</a></p>`
    : '<p><a href="/login">Sign in</a></p>';
  return {
    ...htmlResult(
      status,
      page(`Sign-in failed – ${auth.manifest.name}`, `<h1>Sign-in failed</h1><p class="error" role="alert">${escapeHtml(message)}</p>${again}`),
    ),
    cookies,
  };
}

const unknown = (auth: AuthService, name: string) =>
  errorPage(auth, 404, `This app has no identity provider named ${JSON.stringify(name.slice(0, 40))}.`, null);

/**
 * `GET /login/<name>?returnUrl=`: starts an authorization (code + PKCE, state, nonce).
 * @returns a 303 to the provider with the `svc_login` cookie, or an error page (404 unknown provider, 502 discovery failed)
 */
export async function startProviderLogin(auth: AuthService, providers: Providers, name: string, returnUrl: unknown): Promise<LoginPageResult> {
  const provider = providers.get(name);
  if (!provider) return unknown(auth, name);
  const checks: AuthorizationChecks = {
    state: client.randomState(),
    nonce: provider.oidc ? client.randomNonce() : '',
    codeVerifier: client.randomPKCECodeVerifier(),
    redirectUri: callbackUrl(auth, name),
  };
  let url: URL;
  try {
    url = await provider.authorizationUrl(checks);
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    auth.logger.warn({ provider: name, err: err.cause ?? err }, 'provider sign-in could not start');
    return errorPage(auth, err.status, err.message, `/login/${name}`);
  }
  const cookie = await loginStateCookie(auth, {
    provider: name,
    state: checks.state,
    nonce: checks.nonce,
    codeVerifier: checks.codeVerifier,
    returnUrl: safeReturnUrl(returnUrl),
  });
  return { status: 303, headers: { 'Cache-Control': 'no-store' }, redirect: url.href, cookies: [cookie] };
}

/**
 * `GET /login/<name>/callback?<query>`: finishes the authorization started in this browser.
 * @param query - the raw query string of the request (without `?`)
 * @param cookieHeader - the request's `Cookie` header (the `svc_login` cookie)
 * @returns a 303 to `returnUrl` (or `/`) with the session cookies, or an error page
 */
export async function finishProviderLogin(
  auth: AuthService,
  providers: Providers,
  name: string,
  query: string,
  cookieHeader: string | undefined,
): Promise<LoginPageResult> {
  const provider = providers.get(name);
  if (!provider) return unknown(auth, name);
  const retry = `/login/${name}`;
  const cleared = [clearedLoginState(auth)];
  const kept = await readLoginState(auth, cookieHeader);
  const params = new URLSearchParams(query.length <= 8000 ? query : '');
  if (!kept || kept.provider !== name) return errorPage(auth, 400, 'This sign-in has expired or was started in another browser. Start again.', retry, cleared);
  const withReturn = kept.returnUrl ? `${retry}?returnUrl=${encodeURIComponent(kept.returnUrl)}` : retry;
  if (params.get('error') === 'access_denied') return errorPage(auth, 400, `You did not allow the sign-in at ${provider.displayName}.`, withReturn, cleared);
  if (params.getAll('state').length !== 1 || params.get('state') !== kept.state)
    return errorPage(auth, 400, 'This sign-in could not be checked: its state does not match. Start again.', withReturn, cleared);
  const current = new URL(callbackUrl(auth, name));
  current.search = params.toString();
  const checks: AuthorizationChecks = { state: kept.state, nonce: kept.nonce, codeVerifier: kept.codeVerifier, redirectUri: callbackUrl(auth, name) };
  let user;
  try {
    const identity = await provider.finish(current, checks);
    user = (await userForIdentity(auth, name, identity)).user;
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    auth.logger.warn({ provider: name, err: err.cause ?? err }, 'provider sign-in refused');
    return errorPage(auth, err.status, err.message, withReturn, cleared);
  }
  if (user.disabledAt) return errorPage(auth, 403, 'This account is disabled.', null, cleared);
  const caller = await signedInUser(auth.db, user);
  const session = await startSession(auth, caller, user.username);
  return {
    status: 303,
    headers: { 'Cache-Control': 'no-store' },
    redirect: kept.returnUrl ?? '/',
    cookies: [...cleared, ...sessionCookies(auth, session, callbackUrl(auth, name).startsWith('https://'))],
  };
}
