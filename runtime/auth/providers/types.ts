/**
 * @module The shapes shared by the identity providers (DESIGN §11): what a provider says about who
 * signed in, the checks of one authorization, the `IdentityProvider` interface, and `ProviderError`.
 */

/** Who the provider says signed in. */
export interface ProviderIdentity {
  /** The provider's stable id of the account (`sub`, GitHub's numeric id). */
  subject: string;
  email: string | null;
  /** Whether the provider says it verified `email`. */
  emailVerified: boolean;
  /** A name to derive a username from (`preferred_username`, GitHub's `login`), if any. */
  login: string | null;
}

/** The checks of one authorization: kept in the login-state cookie between start and callback. */
export interface AuthorizationChecks {
  state: string;
  /** OpenID Connect only; empty for OAuth 2.0 presets. */
  nonce: string;
  codeVerifier: string;
  /** The callback URL registered at the provider: `<public origin>/login/<name>/callback`. */
  redirectUri: string;
}

/** A configured provider. */
export interface IdentityProvider {
  name: string;
  /** "Continue with <displayName>". */
  displayName: string;
  /** Whether `POST /api/_auth { authority, idToken }` takes its ID tokens (OpenID Connect). */
  readonly oidc: boolean;
  /** The URL to send the browser to. @throws ProviderError when the provider cannot be reached (discovery) */
  authorizationUrl(checks: AuthorizationChecks): Promise<URL>;
  /**
   * Finishes the callback: checks state (and nonce, PKCE), exchanges the code, reads the identity.
   * @param callbackUrl - the registered callback URL with the query the provider sent
   * @throws ProviderError
   */
  finish(callbackUrl: URL, checks: AuthorizationChecks): Promise<ProviderIdentity>;
  /** Verifies an ID token of a native client (signature against the issuer's JWKS, `iss`, `aud`, `exp`). @throws ProviderError */
  verifyIdToken?(idToken: string): Promise<ProviderIdentity>;
}

/**
 * A refusal of a provider sign-in: `status` 400 (denied, tampered, expired, invalid token) or 502 (the
 * provider could not be reached or answered nonsense); `message` is safe to show.
 */
export class ProviderError extends Error {
  constructor(
    readonly status: 400 | 401 | 502,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderError';
  }
}

/**
 * Whether plain `http:` is allowed for `url`: only on loopback hosts (a test provider, a local
 * issuer); anywhere else the provider must use https.
 */
export function insecureAllowed(url: URL): boolean {
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}
