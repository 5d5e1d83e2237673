/**
 * @module A provider of an external collection on loopback, speaking real HTTP (SPEC §4.10): an OAuth 2
 * token endpoint (client credentials, form-encoded; counts its requests; tokens of a set lifetime) and
 * a data endpoint that checks the bearer token or API key and can be told to misbehave (401 once or
 * always, slow answers, 500 carrying a secret, non-JSON). It records what reached it.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const CLIENT_ID = 'svc-client';
export const CLIENT_SECRET = 'provider-secret-1234';
export const API_KEY = 'key-5678';
/** Text that must never reach our callers: it sits in error bodies and headers of the provider. */
export const LEAKED = 'sk_live_DO_NOT_ECHO';

export interface ProviderBehaviour {
  /** Lifetime of issued tokens, seconds (`expires_in`). */
  tokenLifetime: number;
  /** Answer 401 to the next N data requests whatever the token. */
  unauthorizedNext: number;
  /** Delay every data answer by this many milliseconds. */
  delayMs: number;
  /** Delay token answers (single-flight tests). */
  tokenDelayMs: number;
  /** Answer data requests with this status (and a body carrying `LEAKED`). */
  failWith?: number;
  /** Answer data requests with text that is not JSON. */
  notJson: boolean;
}

export interface Provider {
  url: string;
  behaviour: ProviderBehaviour;
  /** Token requests received (valid or not). */
  tokenRequests: number;
  /** Data requests received: method, path with query, and the authorization it carried. */
  received: { method: string; url: string; authorization?: string; apiKey?: string; cookie?: string }[];
  /** Tokens issued (never forgotten by `reset`: svc may still hold them). */
  issued: Map<string, number>;
  reset(): void;
  close(): Promise<void>;
}

const ITEMS = [
  { id: 'NOK', name: 'Norwegian krone', rate: 11.5 },
  { id: 'SEK', name: 'Swedish krona', rate: 11.2 },
  { id: 'DKK', name: 'Danish krone', rate: 7.46 },
];

async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

const defaults = (): ProviderBehaviour => ({ tokenLifetime: 3600, unauthorizedNext: 0, delayMs: 0, tokenDelayMs: 0, notJson: false });

/** Starts the provider on a free loopback port. */
export async function startProvider(): Promise<Provider> {
  let counter = 0;
  const p: Provider = {
    url: '',
    behaviour: defaults(),
    tokenRequests: 0,
    received: [],
    issued: new Map(),
    reset() {
      p.behaviour = defaults();
      p.tokenRequests = 0;
      p.received = [];
    },
    close: () => new Promise((ok) => server.close(() => ok())),
  };
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers }).end(text);
    };
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/oauth/token') {
      p.tokenRequests += 1;
      const form = new URLSearchParams(await bodyOf(req));
      if (p.behaviour.tokenDelayMs) await new Promise((r) => setTimeout(r, p.behaviour.tokenDelayMs));
      if (!/^application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? '') || form.get('grant_type') !== 'client_credentials') {
        return send(400, { error: 'unsupported_grant_type' });
      }
      if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) return send(401, { error: 'invalid_client' });
      const token = `tok-${++counter}`;
      p.issued.set(token, Date.now() + p.behaviour.tokenLifetime * 1000);
      return send(200, { access_token: token, token_type: 'Bearer', expires_in: p.behaviour.tokenLifetime });
    }
    if (url.pathname.startsWith('/rates')) {
      p.received.push({
        method: req.method ?? '',
        url: `${url.pathname}${url.search}`,
        authorization: req.headers.authorization,
        apiKey: req.headers['x-api-key'] as string | undefined,
        cookie: req.headers.cookie,
      });
      if (p.behaviour.delayMs) await new Promise((r) => setTimeout(r, p.behaviour.delayMs));
      if (res.destroyed) return;
      if (p.behaviour.unauthorizedNext > 0) {
        p.behaviour.unauthorizedNext -= 1;
        return send(401, { error: `invalid token ${LEAKED}` }, { 'www-authenticate': `Bearer error="${LEAKED}"` });
      }
      const bearer = req.headers.authorization?.replace(/^Bearer /, '');
      const keyed = req.headers['x-api-key'] === API_KEY;
      if (!keyed && !(bearer && (p.issued.get(bearer) ?? 0) > Date.now())) return send(401, { error: 'invalid_token' });
      if (p.behaviour.failWith) return send(p.behaviour.failWith, `internal error, key ${LEAKED}`, { 'x-debug': LEAKED });
      if (p.behaviour.notJson) return send(200, '<html>maintenance</html>');
      const id = decodeURIComponent(url.pathname.slice('/rates/'.length));
      if (url.pathname === '/rates' || url.pathname === '/rates/') {
        const min = Number(url.searchParams.get('min') ?? 0);
        return send(200, { data: ITEMS.filter((i) => i.rate >= min), query: Object.fromEntries(url.searchParams) });
      }
      const item = ITEMS.find((i) => i.id === id);
      return item ? send(200, item) : send(404, { error: `no rate ${LEAKED}` });
    }
    send(404, { error: 'not found' });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  p.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return p;
}
