/**
 * @module GitHub's OAuth 2.0 as an `IdentityProvider` (DESIGN §11, the `github` preset): the browser
 * goes to `<baseUrl>/login/oauth/authorize` (code + PKCE S256, state), the code is exchanged at
 * `<baseUrl>/login/oauth/access_token` through `openid-client` (client secret in the body), and the
 * account is read from `<apiUrl>/user` (the numeric `id` is the subject, `login` the name) and
 * `<apiUrl>/user/emails` (the primary address and whether GitHub verified it). GitHub issues no ID
 * token, so native clients cannot use `_auth` with it.
 */
import * as client from 'openid-client';
import { insecureAllowed, ProviderError, type AuthorizationChecks, type IdentityProvider, type ProviderIdentity } from './types.js';
import { providerFailure } from './oidc.js';

/** Resolved settings of the GitHub preset. */
export interface GithubOptions {
  name: string;
  displayName: string;
  clientId: string;
  clientSecret: string;
  /** Default `https://github.com`. */
  baseUrl: URL;
  /** Default `https://api.github.com`. */
  apiUrl: URL;
}

const SCOPE = 'read:user user:email';
const TIMEOUT_MS = 10_000;

/** `base` joined with `path`, keeping a path prefix of `base` (GitHub Enterprise's `/api/v3`). */
const under = (base: URL, path: string): URL => new URL(base.href.replace(/\/?$/, '/') + path.replace(/^\//, ''));

async function getJson(url: URL, accessToken: string, provider: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json', 'user-agent': 'svc' },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new ProviderError(502, `${provider} could not be reached; try again later.`, { cause: err });
  }
  if (!res.ok) throw new ProviderError(502, `${provider} answered ${res.status} to ${url.pathname}`);
  try {
    return await res.json();
  } catch (err) {
    throw new ProviderError(502, `${provider} answered ${url.pathname} with no JSON`, { cause: err });
  }
}

interface GithubEmail {
  email?: unknown;
  primary?: unknown;
  verified?: unknown;
}

/** The identity of GitHub's `/user` and `/user/emails` answers. @throws ProviderError (502) when `/user` has no id */
export function githubIdentity(user: unknown, emails: unknown, provider: string): ProviderIdentity {
  const u = (typeof user === 'object' && user !== null ? user : {}) as Record<string, unknown>;
  if ((typeof u.id !== 'number' && typeof u.id !== 'string') || String(u.id).length === 0 || String(u.id).length > 100)
    throw new ProviderError(502, `${provider} answered /user without an id`);
  const list = (Array.isArray(emails) ? emails : []) as GithubEmail[];
  const valid = list.filter((e): e is { email: string; primary?: unknown; verified?: unknown } => typeof e?.email === 'string' && e.email.length <= 254);
  const primary = valid.find((e) => e.primary === true) ?? valid.find((e) => e.verified === true) ?? null;
  const fallback = typeof u.email === 'string' ? u.email : null;
  return {
    subject: String(u.id),
    email: primary?.email ?? fallback,
    emailVerified: primary !== null && primary.verified === true,
    login: typeof u.login === 'string' ? u.login : null,
  };
}

/** The GitHub preset of `auth.providers`. */
export function githubProvider(o: GithubOptions): IdentityProvider {
  const server: client.ServerMetadata = {
    issuer: o.baseUrl.href,
    authorization_endpoint: under(o.baseUrl, 'login/oauth/authorize').href,
    token_endpoint: under(o.baseUrl, 'login/oauth/access_token').href,
  };
  const config = new client.Configuration(server, o.clientId, undefined, client.ClientSecretPost(o.clientSecret));
  config.timeout = TIMEOUT_MS / 1000;
  if (insecureAllowed(o.baseUrl)) client.allowInsecureRequests(config);
  return {
    name: o.name,
    displayName: o.displayName,
    oidc: false,
    async authorizationUrl(checks: AuthorizationChecks): Promise<URL> {
      return client.buildAuthorizationUrl(config, {
        redirect_uri: checks.redirectUri,
        scope: SCOPE,
        code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
        state: checks.state,
      });
    },
    async finish(callbackUrl: URL, checks: AuthorizationChecks): Promise<ProviderIdentity> {
      let accessToken: string;
      try {
        const tokens = await client.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: checks.codeVerifier, expectedState: checks.state });
        accessToken = tokens.access_token;
      } catch (err) {
        throw providerFailure(err, o.displayName);
      }
      const user = await getJson(under(o.apiUrl, 'user'), accessToken, o.displayName);
      const emails = await getJson(under(o.apiUrl, 'user/emails'), accessToken, o.displayName);
      return githubIdentity(user, emails, o.displayName);
    },
  };
}
