/**
 * @module The identity providers of svc.json `auth.providers` (DESIGN §11) as the runtime uses them:
 * settings resolved at start (`${secrets.NAME}` / `${env.NAME}` references), and one
 * `IdentityProvider` per name that builds the authorization URL (code + PKCE, state, and nonce for
 * OpenID Connect) and finishes the callback into a `ProviderIdentity`. OpenID Connect issuers are
 * read by discovery through `openid-client` on first use (`oidc.ts`); GitHub is an OAuth 2.0 preset
 * (`github.ts`).
 */
import { StartupError } from '../../load-manifest.js';
import { resolveRefs } from '../../secret-refs.js';
import type { ProviderSettings } from '../../contract/settings.js';
import { githubProvider } from './github.js';
import { insecureAllowed, type IdentityProvider } from './types.js';
import { oidcProvider } from './oidc.js';

/** "google" → "Google", "my-idp" → "My-idp". */
const capitalised = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);

/** A URL setting: resolved, parsed, https unless loopback. @throws StartupError naming the setting */
export function urlSetting(value: string, env: NodeJS.ProcessEnv, where: string): URL {
  const text = resolveRefs(value, env, where);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new StartupError(`${where} must be a URL; got ${JSON.stringify(text.slice(0, 100))}`);
  }
  if (url.protocol !== 'https:' && !insecureAllowed(url)) throw new StartupError(`${where} must be an https:// URL (http:// only on a loopback host)`);
  return url;
}

/**
 * The providers of svc.json `auth.providers`, their references resolved; nothing is fetched yet.
 * A provider whose settings cannot be resolved (a referenced variable not set, a wrong URL) is left
 * out and reported to `leftOut`, like an external collection whose secret is missing: the rest of
 * the app serves, the login page shows no button for it and `/login/<name>` answers 404.
 * @param leftOut - called once per provider left out, with its name and why (a StartupError's text);
 *   default: throw that StartupError instead
 * @returns name → provider, in the order of svc.json
 * @throws StartupError naming the setting when a provider is wrong and no `leftOut` is given
 */
export function createProviders(
  settings: Record<string, ProviderSettings>,
  env: NodeJS.ProcessEnv,
  leftOut?: (name: string, why: string) => void,
): Map<string, IdentityProvider> {
  const providers = new Map<string, IdentityProvider>();
  for (const [name, s] of Object.entries(settings)) {
    try {
      providers.set(name, createProvider(name, s, env));
    } catch (err) {
      if (!(err instanceof StartupError) || !leftOut) throw err;
      leftOut(name, err.message);
    }
  }
  return providers;
}

/** One provider of `createProviders`. @throws StartupError naming the setting */
function createProvider(name: string, s: ProviderSettings, env: NodeJS.ProcessEnv): IdentityProvider {
  const at = `auth.providers.${name}`;
  const base = {
    name,
    displayName: s.displayName ?? capitalised(name),
    clientId: resolveRefs(s.clientId, env, `${at}.clientId`),
    clientSecret: resolveRefs(s.clientSecret, env, `${at}.clientSecret`),
  };
  if (s.type === 'oidc') {
    return oidcProvider({ ...base, issuer: urlSetting(s.issuer, env, `${at}.issuer`), scopes: s.scopes ?? ['openid', 'email', 'profile'] });
  }
  return githubProvider({
    ...base,
    baseUrl: urlSetting(s.baseUrl ?? 'https://github.com', env, `${at}.baseUrl`),
    apiUrl: urlSetting(s.apiUrl ?? 'https://api.github.com', env, `${at}.apiUrl`),
  });
}
