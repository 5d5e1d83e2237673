// A stand-in for Google or any OpenID Connect issuer, so the shop's "Continue with Demo ID" button
// works offline: a real, certified OpenID Connect server (`oidc-provider`) on loopback whose sign-in
// page accepts any name (its development interactions). The shop's svc.json registers it as the
// provider `demo` (issuer http://127.0.0.1:4030, client `shop`, secret from SVC_SECRET_DEMO_OIDC).
// Point `auth.providers` in svc.json at a real issuer (Google, Entra ID, Auth0, Keycloak …) instead.

/** Imports `oidc-provider` and builds it without its development-mode warnings (this is a demo). */
async function quietly(build) {
  const warn = console.warn;
  console.warn = (...args) => (/^oidc-provider WARNING/.test(String(args[0])) ? undefined : warn(...args));
  try {
    const { default: Provider } = await import('oidc-provider');
    return build(Provider);
  } finally {
    console.warn = warn;
  }
}

/** The client the shop is registered as; `npm run example` passes the secret to svc serve. */
export const OIDC_CLIENT = { id: 'shop', secret: 'demo-oidc-secret-not-for-production' };

/**
 * Starts the demo issuer on `port`, registered to redirect to `appOrigin`'s
 * `/login/demo/callback`; resolves to the node:http server (call `close()` to stop it).
 */
export async function startDemoOidc(port = 4030, appOrigin = 'http://localhost:3000') {
  const issuer = `http://127.0.0.1:${port}`;
  const callbacks = [appOrigin, appOrigin.replace('localhost', '127.0.0.1')].map((o) => `${o}/login/demo/callback`);
  const provider = await quietly(
    (Provider) =>
      new Provider(issuer, {
        clients: [
          {
            client_id: OIDC_CLIENT.id,
            client_secret: OIDC_CLIENT.secret,
            redirect_uris: [...new Set(callbacks)],
            grant_types: ['authorization_code'],
            response_types: ['code'],
          },
        ],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        // Any account id typed on the development sign-in page becomes a user with a verified e-mail.
        findAccount: (_ctx, sub) => ({
          accountId: sub,
          claims: () => ({ sub, email: `${sub}@demo-id.example`, email_verified: true, name: sub }),
        }),
        pkce: { required: () => true },
      }),
  );
  provider.on('server_error', (_ctx, err) => console.warn(`demo OIDC issuer: ${err.message}`));
  return await new Promise((resolve, reject) => {
    const server = provider.listen(port, '127.0.0.1', () => resolve(server));
    server.once('error', reject);
  });
}
