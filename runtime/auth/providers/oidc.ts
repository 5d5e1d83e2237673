/**
 * @module An OpenID Connect issuer as an `IdentityProvider` (DESIGN §11), through `openid-client`:
 * discovery on first use (retried on the next sign-in when it fails), authorization code with PKCE
 * (S256), state and nonce, client authentication `client_secret_basic`; the e-mail address from the
 * ID token, else from the userinfo endpoint. ID tokens of native clients are verified with jose
 * against the issuer's JWKS (`iss`, `aud` = client id, `exp`, signature).
 */
import * as client from 'openid-client';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { insecureAllowed, ProviderError, type AuthorizationChecks, type IdentityProvider, type ProviderIdentity } from './types.js';

/** Resolved settings of one OpenID Connect provider. */
export interface OidcOptions {
  name: string;
  displayName: string;
  issuer: URL;
  clientId: string;
  clientSecret: string;
  scopes: string[];
}

/** Seconds a request to the provider may take. */
const PROVIDER_TIMEOUT_S = 10;

/** The identity of ID-token or userinfo claims. */
function identityOf(claims: Record<string, unknown>): ProviderIdentity {
  const email = typeof claims.email === 'string' && claims.email.length <= 254 ? claims.email : null;
  const login = typeof claims.preferred_username === 'string' ? claims.preferred_username : null;
  return { subject: String(claims.sub), email, emailVerified: email !== null && claims.email_verified === true, login };
}

/** A failure of openid-client or the network as a `ProviderError` with a message fit to show. */
export function providerFailure(err: unknown, provider: string): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof client.AuthorizationResponseError) {
    const denied = err.error === 'access_denied';
    return new ProviderError(400, denied ? `You did not allow the sign-in at ${provider}.` : `${provider} refused the sign-in (${err.error.slice(0, 80)}).`, {
      cause: err,
    });
  }
  if (err instanceof client.ResponseBodyError) return new ProviderError(400, `${provider} refused the sign-in (${err.error.slice(0, 80)}).`, { cause: err });
  const code = (err as { code?: unknown }).code;
  if (err instanceof TypeError || code === 'OAUTH_TIMEOUT' || (err as Error).name === 'TimeoutError' || code === 'OAUTH_RESPONSE_IS_NOT_CONFORM')
    return new ProviderError(502, `${provider} could not be reached; try again later.`, { cause: err });
  return new ProviderError(400, `The sign-in with ${provider} could not be checked (it was altered, replayed or has expired); start again.`, { cause: err });
}

/** An OpenID Connect provider of `auth.providers` (discovery happens on its first use). */
export function oidcProvider(o: OidcOptions): IdentityProvider {
  let discovered: Promise<client.Configuration> | undefined;
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  const scope = [...new Set(['openid', ...o.scopes])].join(' ');
  const configuration = (): Promise<client.Configuration> => {
    discovered ??= client
      .discovery(o.issuer, o.clientId, undefined, client.ClientSecretBasic(o.clientSecret), {
        execute: insecureAllowed(o.issuer) ? [client.allowInsecureRequests] : [],
        timeout: PROVIDER_TIMEOUT_S,
      })
      .then((config) => {
        config.timeout = PROVIDER_TIMEOUT_S;
        return config;
      })
      .catch((err: unknown) => {
        discovered = undefined; // the next sign-in tries again
        throw providerFailure(err, o.displayName);
      });
    return discovered;
  };

  return {
    name: o.name,
    displayName: o.displayName,
    oidc: true,
    async authorizationUrl(checks: AuthorizationChecks): Promise<URL> {
      const config = await configuration();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: checks.redirectUri,
        scope,
        response_type: 'code',
        code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
        state: checks.state,
        nonce: checks.nonce,
      });
    },
    async finish(callbackUrl: URL, checks: AuthorizationChecks): Promise<ProviderIdentity> {
      const config = await configuration();
      try {
        const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims()!;
        let identity = identityOf(claims);
        if (identity.email === null && config.serverMetadata().userinfo_endpoint) {
          const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
          identity = { ...identityOf({ ...info, sub: claims.sub }), login: identity.login ?? identityOf(info).login };
        }
        return identity;
      } catch (err) {
        throw providerFailure(err, o.displayName);
      }
    },
    async verifyIdToken(idToken: string): Promise<ProviderIdentity> {
      const config = await configuration();
      const meta = config.serverMetadata();
      if (!meta.jwks_uri) throw new ProviderError(502, `${o.displayName} publishes no jwks_uri`);
      jwks ??= createRemoteJWKSet(new URL(meta.jwks_uri), { timeoutDuration: PROVIDER_TIMEOUT_S * 1000 });
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(idToken, jwks, { issuer: meta.issuer, audience: o.clientId, requiredClaims: ['sub', 'exp', 'iat'], clockTolerance: 5 }));
      } catch (err) {
        if (err instanceof TypeError || (err as { code?: string }).code === 'ERR_JWKS_TIMEOUT')
          throw new ProviderError(502, `${o.displayName} could not be reached; try again later.`, { cause: err });
        throw new ProviderError(401, 'the ID token is not valid (signature, issuer, audience or expiry)', { cause: err });
      }
      return identityOf(payload as Record<string, unknown>);
    },
  };
}
