/**
 * External collections end to end (SPEC §4.10, DESIGN §3 and §4 "External details", issue "external
 * collections"): `svc serve` forwards GETs to a provider on loopback (`test/support/external-provider.ts`,
 * real HTTP) through `none`, `apiKey` and OAuth 2 client-credentials connections. Token reuse, expiry
 * (renewed 30 s early), one token request for concurrent callers, one re-authentication and retry after
 * a 401, timeouts, failures that never echo the provider's text, 405 for writes and access rules
 * checked before anything reaches the provider; then the definition errors of `svc generate`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { pino } from 'pino';
import { runCli } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { API_KEY, CLIENT_ID, CLIENT_SECRET, LEAKED, startProvider, type Provider } from '../support/external-provider.js';
import { ANONYMOUS, apiClientFor, startServer, type RunningServer } from '../../dist/runtime/index.js';

const write = (dir: string, file: string, data: unknown) => {
  mkdirSync(join(dir, file, '..'), { recursive: true });
  writeFileSync(join(dir, file), JSON.stringify(data, null, 2));
};

/** An oauth2 external against the provider, readable by `staff`. */
const oauth = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  name,
  url: `${url}/rates`,
  connection: { type: 'oauth2', tokenUrl: `${url}/oauth/token`, clientId: CLIENT_ID, clientSecret: '${secrets.RATES}' },
  access: [{ method: 'GET', roleNames: ['staff'] }],
  ...extra,
});

describe('external collections', () => {
  let provider: Provider;
  let dir: string;
  let env: Record<string, string>;
  let server: RunningServer;
  let base: string;
  let staff: Identity;
  let stranger: Identity;
  let admin: Identity;

  const get = async (path: string, who: Identity | null = staff, init: RequestInit = {}) => {
    const r = await fetch(`${base}${path}`, { ...init, headers: { ...(who?.headers ?? {}), ...(init.headers as Record<string, string>) } });
    const text = await r.text();
    return { status: r.status, text, json: text ? JSON.parse(text) : undefined, headers: r.headers };
  };

  beforeAll(async () => {
    provider = await startProvider();
    dir = mkdtempSync(join(tmpdir(), 'svc-ext-'));
    env = { DATABASE_URL: `file:${join(dir, 'data', 'app.db')}`, SVC_SECRET_RATES: CLIENT_SECRET, SVC_SECRET_KEYED: API_KEY };
    write(dir, 'svc.json', { name: 'ext' });
    write(dir, 'collections/Note.json', {
      name: 'Note',
      properties: { text: { type: 'string' } },
      access: [{ method: 'GET', roleNames: ['_AUTHENTICATED_USER'] }],
    });
    for (const name of ['Rates', 'Reuse', 'Crowd', 'Expiry', 'Retry', 'Failing']) write(dir, `external/${name}.json`, oauth(name, provider.url));
    write(dir, 'external/Slow.json', oauth('Slow', provider.url, { timeoutMs: 300 }));
    write(dir, 'external/Keyed.json', {
      name: 'Keyed',
      url: `${provider.url}/rates`,
      connection: { type: 'apiKey', header: 'X-Api-Key', value: '${secrets.KEYED}' },
      access: [{ method: 'GET', roleNames: ['_AUTHENTICATED_USER'] }],
    });
    write(dir, 'external/Fixed.json', oauth('Fixed', provider.url, { url: `${provider.url}/rates?min=11` }));
    write(dir, 'external/Open.json', { name: 'Open', url: `${provider.url}/rates`, access: [{ method: 'GET', roleNames: ['_ANONYMOUS_USER'] }] });
    const generated = await runCli(['generate', dir], env);
    expect(generated.code, generated.stderr).toBe(0);
    server = await startServer({ appDir: dir, port: 0, env: { ...process.env, ...env }, logger: pino({ level: 'silent' }) });
    base = server.url;
    const app = { dir, env };
    admin = await adminIdentity(app, base);
    staff = await userIdentity(app, base, 'sam', ['staff']);
    stranger = await userIdentity(app, base, 'sid');
  });
  afterAll(async () => {
    await server?.close();
    await provider?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('forwards the list and one item with the query string, and only the connection’s credentials', async () => {
    provider.reset();
    const list = await get('/Rates?min=11&tag=a&tag=b', staff, { headers: { cookie: 'svc_access=mine' } });
    expect(list.status).toBe(200);
    expect(list.json).toEqual({
      data: [
        { id: 'NOK', name: 'Norwegian krone', rate: 11.5 },
        { id: 'SEK', name: 'Swedish krona', rate: 11.2 },
      ],
      query: { min: '11', tag: 'b' },
    });
    expect(provider.received[0].url).toBe('/rates?min=11&tag=a&tag=b');
    const one = await get('/Rates/NOK');
    expect(one.json).toEqual({ id: 'NOK', name: 'Norwegian krone', rate: 11.5 });
    expect(provider.received[0].authorization).toMatch(/^Bearer tok-\d+$/);
    expect(provider.received[1].authorization).toBe(provider.received[0].authorization);
    expect(provider.received.some((r) => r.cookie !== undefined || r.authorization === staff.headers.authorization)).toBe(false);
    const missing = await get('/Rates/XYZ');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ error: 'Rates "XYZ" was not found', code: 'NOT_FOUND' });
  });

  it('refuses ids that would name another provider path; fixed parameters of url win and the id goes before them', async () => {
    provider.reset();
    // fetch() would normalise `/.` away, so the paths go out as written.
    const raw = (path: string) =>
      new Promise<{ status: number; json: { code?: string; details?: { path: string }[] } }>((ok, fail) => {
        const u = new URL(base);
        const req = httpRequest({ host: u.hostname, port: u.port, path: `${u.pathname}${path}`, headers: staff.headers }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => ok({ status: res.statusCode ?? 0, json: JSON.parse(text || '{}') }));
        });
        req.on('error', fail).end();
      });
    for (const path of ['/Rates/.', '/Rates/%2e', '/Rates/NOK%2F..%2F..%2Foauth', '/Rates/a%5Cb', '/Rates/%2E%2E']) {
      const r = await raw(path);
      expect(r.status, path).toBe(400);
      expect(r.json.code, path).toBe('INVALID_PARAMETER');
      expect(r.json.details?.[0].path, path).toBe('/id');
    }
    expect(provider.received).toEqual([]);
    const list = await get('/Fixed?min=0&tag=a');
    expect(list.status).toBe(200);
    expect(list.json.data.map((i: { id: string }) => i.id)).toEqual(['NOK', 'SEK']);
    const one = await get('/Fixed/NOK?min=0');
    expect(one.json).toMatchObject({ id: 'NOK' });
    expect(provider.received.map((r) => r.url)).toEqual(['/rates?min=11&tag=a', '/rates/NOK?min=11']);
  });

  it('reuses one token across requests', async () => {
    provider.reset();
    for (let i = 0; i < 5; i++) expect((await get('/Reuse')).status).toBe(200);
    expect(provider.tokenRequests).toBe(1);
    expect(new Set(provider.received.map((r) => r.authorization)).size).toBe(1);
  });

  it('concurrent first requests share one token request', async () => {
    provider.reset();
    provider.behaviour.tokenDelayMs = 200;
    const answers = await Promise.all(Array.from({ length: 20 }, () => get('/Crowd')));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(provider.tokenRequests).toBe(1);
  });

  it('renews a token 30 s before it expires: the first request after that authenticates again', async () => {
    provider.reset();
    provider.behaviour.tokenLifetime = 31; // usable for 1 s
    expect((await get('/Expiry')).status).toBe(200);
    expect((await get('/Expiry')).status).toBe(200);
    expect(provider.tokenRequests).toBe(1);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await get('/Expiry')).status).toBe(200);
    expect(provider.tokenRequests).toBe(2);
    const [a, b, c] = provider.received.map((r) => r.authorization);
    expect(a).toBe(b);
    expect(c).not.toBe(a);
  });

  it('a 401 triggers one re-authentication and one retry; a second 401 is a 502 that echoes nothing', async () => {
    provider.reset();
    expect((await get('/Retry')).status).toBe(200);
    provider.behaviour.unauthorizedNext = 1;
    const retried = await get('/Retry');
    expect(retried.status).toBe(200);
    expect(provider.tokenRequests).toBe(2);
    expect(provider.received.length).toBe(3);
    provider.behaviour.unauthorizedNext = 2;
    const refused = await get('/Retry');
    expect(refused.status).toBe(502);
    expect(refused.json).toEqual({ error: 'Retry: the provider answered 401', code: 'BAD_GATEWAY' });
    expect(provider.tokenRequests).toBe(3);
    expect(provider.received.length).toBe(5);
    expect(refused.text + JSON.stringify([...refused.headers])).not.toContain(LEAKED);
  });

  it('provider failures are 502 and timeouts 504, without the provider’s text, headers or token', async () => {
    provider.reset();
    provider.behaviour.failWith = 500;
    const failed = await get('/Failing');
    expect(failed.status).toBe(502);
    expect(failed.json).toEqual({ error: 'Failing: the provider answered 500', code: 'BAD_GATEWAY' });
    const everything = failed.text + JSON.stringify([...failed.headers]);
    expect(everything).not.toContain(LEAKED);
    expect(everything).not.toContain('tok-');
    provider.behaviour.failWith = undefined;
    provider.behaviour.notJson = true;
    expect((await get('/Failing')).json).toEqual({ error: "Failing: the provider's answer is not JSON", code: 'BAD_GATEWAY' });
    provider.behaviour.notJson = false;
    provider.behaviour.delayMs = 3000;
    const started = Date.now();
    const slow = await get('/Slow');
    expect(slow.status).toBe(504);
    expect(slow.json.code).toBe('GATEWAY_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('an unreachable provider or token endpoint is a 502', async () => {
    provider.reset();
    const down = await startProvider();
    const url = down.url;
    await down.close();
    // A throwaway source pointed at a closed port, through the same forwarding code.
    const { forwardRead, externalSources } = await import('../../dist/runtime/external/forward.js');
    const sources = externalSources(
      [{ ...oauth('Gone', url), connection: { type: 'oauth2', tokenUrl: `${url}/oauth/token`, clientId: 'a', clientSecret: 'b' }, access: [] }] as never,
      (v) => v,
    );
    await expect(forwardRead(sources.get('Gone')!, { query: {}, reqId: 'r' }, pino({ level: 'silent' }))).rejects.toMatchObject({
      status: 502,
      code: 'BAD_GATEWAY',
    });
  });

  it('writes answer 405 and reach nothing; access rules are checked before the provider is called', async () => {
    provider.reset();
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await get(method === 'POST' ? '/Rates' : '/Rates/NOK', staff, { method, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(r.status, method).toBe(405);
      expect(r.json.code).toBe('METHOD_NOT_ALLOWED');
    }
    expect((await get('/Rates', null)).status).toBe(401);
    expect((await get('/Rates/NOK', stranger)).status).toBe(403);
    expect((await get('/Rates', admin)).status).toBe(200);
    expect(provider.received.map((r) => r.method)).toEqual(['GET']);
    expect((await get('/Rates/_listen', staff, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(405);
  });

  it('apiKey sends its header; none sends no credentials; the in-process API client reaches externals too', async () => {
    provider.reset();
    expect((await get('/Keyed', stranger)).status).toBe(200);
    expect(provider.received[0]).toMatchObject({ apiKey: API_KEY, authorization: undefined });
    // `none`: the provider refuses (no credentials), which is a 502 for us.
    expect((await get('/Open', null)).status).toBe(502);
    expect(provider.received[1]).toMatchObject({ apiKey: undefined, authorization: undefined });
    const inProcess = await apiClientFor(server.runtime, ANONYMOUS).request({ method: 'GET', path: '/Keyed/SEK' });
    expect(inProcess.status).toBe(401);
  });

  it('openapi.json and agent-tools.json describe the external collections', () => {
    const doc = JSON.parse(readFileSync(join(dir, '.svc', 'openapi.json'), 'utf8'));
    expect(Object.keys(doc.paths['/Rates'])).toEqual(['get']);
    expect(Object.keys(doc.paths['/Rates/{id}'])).toEqual(['parameters', 'get']);
    expect(doc.paths['/Rates'].get.responses['502']).toBeDefined();
    const tools = JSON.parse(readFileSync(join(dir, '.svc', 'agent-tools.json'), 'utf8'));
    expect(JSON.stringify(tools.all)).toContain('listRates');
    // No secret and no resolved reference in the generated output.
    for (const file of ['manifest.json', 'openapi.json']) expect(readFileSync(join(dir, '.svc', file), 'utf8')).not.toContain(CLIENT_SECRET);
  });

  it('an external whose secret is not set answers 503 naming the variable; the rest of the app serves', async () => {
    const { SVC_SECRET_RATES: _gone, ...rest } = { ...process.env, ...env };
    const partial = await startServer({ appDir: dir, port: 0, env: rest, logger: pino({ level: 'silent' }) });
    try {
      const r = await fetch(`${partial.url}/Rates`, { headers: admin.headers });
      expect(r.status).toBe(503);
      expect((await r.json()).error).toBe(
        'Rates is not configured: external/Rates.json connection.clientSecret refers to ${secrets.RATES}, but the environment variable SVC_SECRET_RATES is not set',
      );
      expect((await fetch(`${partial.url}/Keyed`, { headers: admin.headers })).status).toBe(200);
      expect((await fetch(`${partial.url}/Note`, { headers: admin.headers })).status).toBe(200);
    } finally {
      await partial.close();
    }
  });

  it('svc generate refuses a secret in clear, an external named like a collection, and _CREATOR', async () => {
    const bad = mkdtempSync(join(tmpdir(), 'svc-ext-bad-'));
    try {
      write(bad, 'svc.json', { name: 'bad' });
      write(bad, 'collections/Rates.json', { name: 'Rates', properties: { a: { type: 'string' } } });
      write(bad, 'external/Rates.json', { name: 'Rates', url: 'https://p.example/rates' });
      write(bad, 'external/Clear.json', {
        name: 'Clear',
        url: 'https://p.example/rates',
        connection: { type: 'oauth2', tokenUrl: 'https://p.example/token', clientId: 'id', clientSecret: 'hunter2' },
        access: [{ method: 'GET', roleNames: ['_CREATOR'] }],
      });
      const r = await runCli(['generate', bad], { DATABASE_URL: `file:${join(bad, 'db')}` });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('external/Clear.json: /connection/clientSecret: clientSecret must be a reference such as "${secrets.CLEAR}"');
      expect(r.stderr).toContain('external/Clear.json: /access/0/roleNames/0: _CREATOR cannot be granted on an external collection');
      expect(r.stderr).toContain('external/Rates.json: /name: name "Rates" is already used by collections/Rates.json');
      expect(r.stderr).not.toContain('hunter2');
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});
