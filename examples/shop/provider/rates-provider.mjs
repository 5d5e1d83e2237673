#!/usr/bin/env node
// A small exchange-rate provider for the shop's external collection `Rates`, so the example runs
// offline: OAuth 2 client credentials at POST /oauth/token (client "shop", secret "demo-secret",
// tokens valid 5 minutes), then GET /rates (?min=<rate> filters) and GET /rates/<code> with
// `Authorization: Bearer <token>`. `npm run example` starts it; alone: node rates-provider.mjs [port]
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const CLIENT = { id: 'shop', secret: 'demo-secret' };
const RATES = [
  { id: 'USD', name: 'US dollar', rate: 1.08 },
  { id: 'GBP', name: 'Pound sterling', rate: 0.85 },
  { id: 'NOK', name: 'Norwegian krone', rate: 11.62 },
  { id: 'SEK', name: 'Swedish krona', rate: 11.23 },
  { id: 'DKK', name: 'Danish krone', rate: 7.46 },
  { id: 'JPY', name: 'Japanese yen', rate: 162.4 },
];
const LIFETIME_S = 300;

/** Starts the provider on 127.0.0.1:`port`; resolves to the server. */
export function startRatesProvider(port = 4010) {
  const tokens = new Map();
  const server = createServer(async (req, res) => {
    const send = (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const url = new URL(req.url, 'http://localhost');
    if (req.method === 'POST' && url.pathname === '/oauth/token') {
      let text = '';
      for await (const chunk of req) text += chunk;
      const form = new URLSearchParams(text);
      if (form.get('grant_type') !== 'client_credentials') return send(400, { error: 'unsupported_grant_type' });
      if (form.get('client_id') !== CLIENT.id || form.get('client_secret') !== CLIENT.secret) return send(401, { error: 'invalid_client' });
      const token = randomBytes(16).toString('hex');
      tokens.set(token, Date.now() + LIFETIME_S * 1000);
      return send(200, { access_token: token, token_type: 'Bearer', expires_in: LIFETIME_S });
    }
    if (req.method === 'GET' && url.pathname.startsWith('/rates')) {
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      if (!(tokens.get(token) > Date.now())) return send(401, { error: 'invalid_token' });
      const code = url.pathname.slice('/rates/'.length);
      if (!code) {
        const min = Number(url.searchParams.get('min') ?? 0);
        return send(200, { base: 'EUR', data: RATES.filter((r) => r.rate >= min) });
      }
      const rate = RATES.find((r) => r.id === code.toUpperCase());
      return rate ? send(200, { base: 'EUR', ...rate }) : send(404, { error: 'unknown currency' });
    }
    send(404, { error: 'not found' });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = Number(process.argv[2] ?? 4010);
  await startRatesProvider(port);
  console.log(`rates provider at http://127.0.0.1:${port} (client "${CLIENT.id}", secret "${CLIENT.secret}")`);
}
