/**
 * @module A real OpenID Connect provider on loopback for the provider sign-in tests (DESIGN §11):
 * `oidc-provider` (a certified implementation) with its development login and consent pages, which
 * accept any login name. The HTTP server listens first (so the app can be started with the issuer's
 * URL), and the provider is made once the app's callback URL is known (`register`). Accounts: the
 * login name is the subject; its claims are `<login>@example.test` (verified) and the login as
 * `preferred_username`. The test holds the provider's signing key, so it can sign ID tokens the
 * issuer's JWKS verifies (expired, wrong audience) besides those the provider issues.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';

export interface TestOidcProvider {
  /** `http://127.0.0.1:<port>` */
  issuer: string;
  /** Makes the provider with one confidential client; until then every request answers 503. */
  register(client: { clientId: string; clientSecret: string; redirectUris: string[] }): void;
  /** An ID token signed with the provider's own key (`kid` of its JWKS), with `claims` over defaults. */
  signIdToken(claims: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** Starts the provider's HTTP server on a free loopback port. */
export async function startOidcProvider(): Promise<TestOidcProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  let handler: ((req: Parameters<Parameters<typeof createServer>[0]>[0], res: Parameters<Parameters<typeof createServer>[0]>[1]) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (handler) return handler(req, res);
    res.writeHead(503).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let clientId = '';
  return {
    issuer,
    register(client) {
      clientId = client.clientId;
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: client.clientId,
            client_secret: client.clientSecret,
            redirect_uris: client.redirectUris,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        jwks: { keys: [jwk] },
        cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'] },
        pkce: { required: () => true },
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
        findAccount: (_ctx: unknown, id: string) => ({
          accountId: id,
          claims: () => ({ sub: id, email: `${id}@example.test`, email_verified: true, preferred_username: id }),
        }),
      });
      handler = provider.callback();
    },
    signIdToken(claims) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ sub: 'signed-by-test', email: 'token@example.test', email_verified: true, ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key', typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience((claims.aud as string | undefined) ?? clientId)
        .setIssuedAt(now)
        .setExpirationTime((claims.exp as number | undefined) ?? now + 600)
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
