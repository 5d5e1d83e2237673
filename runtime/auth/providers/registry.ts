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
 * @returns name → provider, in the order of svc.json
 * @throws StartupError naming the setting when a referenced variable is not set or a URL is wrong
 */
export function createProviders(settings: Record<string, ProviderSettings>, env: NodeJS.ProcessEnv): Map<string, IdentityProvider> {
  const providers = new Map<string, IdentityProvider>();
  for (const [name, s] of Object.entries(settings)) {
    const at = `auth.providers.${name}`;
    const base = {
      name,
      displayName: s.displayName ?? capitalised(name),
      clientId: resolveRefs(s.clientId, env, `${at}.clientId`),
      clientSecret: resolveRefs(s.clientSecret, env, `${at}.clientSecret`),
    };
    if (s.type === 'oidc') {
      providers.set(name, oidcProvider({ ...base, issuer: urlSetting(s.issuer, env, `${at}.issuer`), scopes: s.scopes ?? ['openid', 'email', 'profile'] }));
    } else {
      providers.set(
        name,
        githubProvider({
          ...base,
          baseUrl: urlSetting(s.baseUrl ?? 'https://github.com', env, `${at}.baseUrl`),
          apiUrl: urlSetting(s.apiUrl ?? 'https://api.github.com', env, `${at}.apiUrl`),
        }),
      );
    }
  }
  return providers;
}
