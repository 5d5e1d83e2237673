/**
 * @module A tiny server on loopback that speaks GitHub's OAuth 2.0 endpoints, for the `github` preset
 * tests (DESIGN §11): `GET /login/oauth/authorize` approves at once as the current account and
 * redirects back with a code and the state; `POST /login/oauth/access_token` checks the client
 * secret, the redirect URI and the PKCE verifier (S256) and answers a bearer token as JSON;
 * `GET /api/user` and `GET /api/user/emails` answer the account (the API is under `/api`, as on
 * GitHub Enterprise, so the tests also prove that `apiUrl` keeps its path).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The account the next authorization signs in as. */
export interface GithubAccount {
  id: number;
  login: string;
  email: string;
  verified: boolean;
}

export interface TestGithub {
  /** `http://127.0.0.1:<port>` (the `baseUrl`); the API is `<url>/api`. */
  url: string;
  account: GithubAccount;
  /** Token requests seen, with whether their PKCE verifier matched. */
  tokenRequests: { pkce: boolean }[];
  close(): Promise<void>;
}

const body = (req: IncomingMessage): Promise<string> =>
  new Promise((ok) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => ok(text));
  });

/** Starts the server for one client (`clientId`, `clientSecret`). */
export async function startGithub(clientId: string, clientSecret: string): Promise<TestGithub> {
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  const tokens = new Set<string>();
  const state: TestGithub = {
    url: '',
    account: { id: 1001, login: 'octo', email: 'octo@example.test', verified: true },
    tokenRequests: [],
    close: async () => {},
  };
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const q = url.searchParams;
      if (q.get('client_id') !== clientId || q.get('code_challenge_method') !== 'S256') return send(400, { error: 'bad request' });
      const code = randomBytes(12).toString('hex');
      codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')! });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      return res.writeHead(302, { location: back.href }).end();
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const f = new URLSearchParams(await body(req));
      const grant = codes.get(f.get('code') ?? '');
      codes.delete(f.get('code') ?? '');
      const pkce =
        grant !== undefined &&
        createHash('sha256')
          .update(f.get('code_verifier') ?? '')
          .digest('base64url') === grant.challenge;
      state.tokenRequests.push({ pkce });
      if (f.get('client_id') !== clientId || f.get('client_secret') !== clientSecret) return send(401, { error: 'incorrect_client_credentials' });
      if (!grant || !pkce || f.get('redirect_uri') !== grant.redirectUri) return send(400, { error: 'bad_verification_code' });
      const token = `gho_${randomBytes(12).toString('hex')}`;
      tokens.add(token);
      return send(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !tokens.has(bearer)) return send(401, { message: 'Bad credentials' });
    const a = state.account;
    if (url.pathname === '/api/user') return send(200, { id: a.id, login: a.login, email: null });
    if (url.pathname === '/api/user/emails')
      return send(200, [
        { email: `${a.login}-other@example.test`, primary: false, verified: true },
        { email: a.email, primary: true, verified: a.verified },
      ]);
    send(404, { message: 'Not Found' });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    });
  return state;
}
