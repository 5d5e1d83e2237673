/**
 * The function routes served on plain `node:http` (`runtime/http/function-handler.ts`) answer exactly as
 * the Express routes do (SPEC §4.8, §7; DESIGN §4). The fast path serves the canonical spellings
 * `/api/<name>` and `/api/_invoke/<name>`; Express still serves every other spelling, such as the same
 * path with a trailing slash (Express routes are not strict). So each request here is sent twice, once
 * per spelling, and the two answers must have the same status, headers (but `Date` and a generated
 * `x-request-id`) and body: JSON and text bodies, query arrays, typed-input 400s, 401 (with the bearer
 * challenge), 403, 404, 413, 415, the code's own status and validation errors, a throw (500 without a
 * stack), request ids echoed and logged. Then hostile bodies and query strings from one seed
 * (`SVC_FUZZ_SEED` replays a run): every answer is a 2xx or 4xx, never a 5xx, the same on both paths.
 * Nothing here depends on the database, so it runs on SQLite only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer, trustLoopback } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { json, value } from '../support/fuzz-cases.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { waitFor } from '../support/wait.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/functions');
const SECRETS = { SVC_SECRET_API_KEY: 'key-123' };

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Probe {
  name: string;
  method?: string;
  /** The canonical path below `/api`, e.g. `/echo?tag=a`; its Express spelling adds a `/` before the query. */
  url: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Adds the trailing slash that makes Express, not the fast path, serve the request. */
function expressSpelling(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? `${url}/` : `${url.slice(0, q)}/${url.slice(q)}`;
}

async function send(base: string, url: string, p: Probe): Promise<Answer> {
  const res = await fetch(base + url, { method: p.method ?? 'GET', headers: p.headers, body: p.body });
  const headers: Record<string, string> = {};
  for (const [k, v] of res.headers) if (k !== 'date' && !(k === 'x-request-id' && !p.headers?.['x-request-id'])) headers[k] = v;
  return { status: res.status, headers, body: await res.text() };
}

/** Sends `p` on both paths; expects the same answer and returns it. */
async function both(base: string, p: Probe): Promise<Answer> {
  const fast = await send(base, p.url, p);
  const slow = await send(base, expressSpelling(p.url), p);
  // The echo function returns the path it was called at nowhere, so the bodies compare as they are.
  expect(fast, `${p.name} (fast path vs Express)`).toEqual(slow);
  return fast;
}

describe('function routes on the fast path', () => {
  let app: PreparedApp;
  let server: TestServer;
  let base: string;
  let user: Identity;

  beforeAll(async () => {
    app = await prepareApp(FIXTURE, 'sqlite', (dir) => {
      // The requests' own x-request-id is echoed and logged only from a trusted proxy.
      trustLoopback(dir);
      // A function only the `editor` role may call: the 403 case.
      writeFileSync(
        join(dir, 'functions', 'editorsOnly.json'),
        JSON.stringify({ name: 'editorsOnly', functionTypeId: 1, endpoint: '/editorsOnly', access: { GET: ['editor'] } }),
      );
      writeFileSync(join(dir, 'functions', 'editorsOnly.ts'), 'export default async () => ({ edited: true });\n');
    });
    server = await serve(app.dir, { ...app.env, ...SECRETS });
    base = server.url;
    user = await userIdentity(app, base, 'fast-path-user');
  });
  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('answers as the Express routes do: bodies, queries, typed inputs, access, limits, status, throws', async () => {
    const json = { 'content-type': 'application/json' };
    const probes: (Probe & { status: number })[] = [
      { name: 'GET with a repeated query parameter', url: '/echo?tag=a&x=1&x=2', status: 200 },
      { name: 'POST JSON', method: 'POST', url: '/echo', headers: json, body: '{"a":[1,{"b":null}]}', status: 200 },
      { name: 'POST +json type', method: 'POST', url: '/echo', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"a":1}', status: 200 },
      { name: 'POST text', method: 'POST', url: '/echo', headers: { 'content-type': 'text/plain' }, body: 'hello é', status: 200 },
      { name: 'POST empty JSON', method: 'POST', url: '/echo', headers: json, body: '', status: 200 },
      { name: 'POST malformed JSON', method: 'POST', url: '/echo', headers: json, body: '{"a":', status: 400 },
      { name: 'POST a JSON string (strict parser)', method: 'POST', url: '/echo', headers: json, body: '"x"', status: 400 },
      { name: 'POST latin1 JSON', method: 'POST', url: '/echo', headers: { 'content-type': 'application/json; charset=latin1' }, body: '{}', status: 415 },
      { name: 'via _invoke', url: '/_invoke/echo?tag=b', status: 200 },
      { name: 'typed: required query missing', url: '/_invoke/typed', status: 400 },
      { name: 'typed: wrong query types', url: '/_invoke/typed?n=x&flag=maybe&color=blue', status: 400 },
      { name: 'typed: wrong body type', method: 'PUT', url: '/_invoke/typed?n=1', headers: json, body: '{"title":1,"qty":"x"}', status: 400 },
      { name: 'typed: good', method: 'DELETE', url: '/_invoke/typed?n=2&price=1.5', status: 200 },
      { name: 'anonymous where sign-in is needed', url: '/authOnly', status: 401 },
      { name: 'a bad bearer token', url: '/authOnly', headers: { authorization: 'Bearer nope' }, status: 401 },
      { name: 'signed in', url: '/authOnly', headers: user.headers, status: 200 },
      { name: 'a role the caller lacks', url: '/editorsOnly', headers: user.headers, status: 403 },
      { name: 'the code sets its own status', url: '/teapot', status: 418 },
      { name: 'the code reports validation errors', url: '/validates', status: 400 },
      { name: 'the code throws', url: '/boom', status: 500 },
      { name: 'a request id is echoed', url: '/echo', headers: { 'x-request-id': 'fast-path-1' }, status: 200 },
      { name: 'secrets', url: '/mySecrets', headers: user.headers, status: 200 },
    ];
    for (const p of probes) {
      const answer = await both(base, p);
      expect(answer.status, `${p.name}: ${answer.body.slice(0, 300)}`).toBe(p.status);
      if (answer.status >= 400) {
        expect(JSON.parse(answer.body), p.name).toMatchObject({ error: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) });
        expect(answer.body, p.name).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
      }
    }
    expect((await both(base, probes[14])).headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect((await both(base, probes[20])).headers['x-request-id']).toBe('fast-path-1');
  });

  it('refuses a body over 10 MiB with 413, as Express does', async () => {
    const big = `{"a":"${'x'.repeat(10 * 1024 * 1024)}"}`;
    const answer = await both(base, { name: 'too large', method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, body: big });
    expect(answer.status).toBe(413);
  });

  it('logs one line per call with the request id, method, url and status', async () => {
    await send(base, '/echo?tag=logged', { name: 'logged', url: '', headers: { 'x-request-id': 'fast-path-logged' } });
    await send(base, '/authOnly', { name: 'refused', url: '', headers: { 'x-request-id': 'fast-path-refused' } });
    // Log lines are written when the answer has been sent: wait for both.
    const lines = () =>
      server
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'request');
    const logged = await waitFor(() => lines().find((l) => l.reqId === 'fast-path-logged'));
    const refused = await waitFor(() => lines().find((l) => l.reqId === 'fast-path-refused'));
    expect(logged).toMatchObject({ method: 'GET', url: '/api/echo?tag=logged', status: 200, durationMs: expect.any(Number) });
    expect(refused).toMatchObject({ method: 'GET', url: '/api/authOnly', status: 401 });
  });

  it('serves GET /api/_webAppConfig beside Express as Express does: body, ETag, HEAD, 401, 304, 405, log line', async () => {
    const probes: (Probe & { status: number })[] = [
      { name: 'config', url: '/_webAppConfig', status: 200 },
      { name: 'config with a query', url: '/_webAppConfig?x=1', status: 200 },
      { name: 'config signed in', url: '/_webAppConfig', headers: user.headers, status: 200 },
      { name: 'config with a bad bearer token', url: '/_webAppConfig', headers: { authorization: 'Bearer nope' }, status: 401 },
      { name: 'config HEAD', method: 'HEAD', url: '/_webAppConfig', status: 200 },
      { name: 'config with a request id', url: '/_webAppConfig', headers: { 'x-request-id': 'config-fast-1' }, status: 200 },
    ];
    for (const p of probes) expect((await both(base, p)).status, p.name).toBe(p.status);
    const first = await both(base, probes[0]);
    expect(JSON.parse(first.body)).toMatchObject({ loginUrl: '/login', loginMethods: ['password'] });
    expect(first.headers.etag).toMatch(/^W\/"/);
    // A conditional request is left to Express: the same answer as the Express spelling's; another method is 405 there.
    const conditional = { name: 'conditional', url: '/_webAppConfig', headers: { 'if-none-match': first.headers.etag } };
    expect((await both(base, conditional)).status).toBe((await send(base, expressSpelling('/_webAppConfig'), conditional)).status);
    expect((await send(base, '/_webAppConfig', { name: '405', url: '', method: 'POST' })).status).toBe(405);
    const line = await waitFor(() =>
      server
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === 'request' && l.reqId === 'config-fast-1'),
    );
    expect(line).toMatchObject({ method: 'GET', url: '/api/_webAppConfig', status: 200 });
  });

  it('answers hostile bodies and query strings with a 2xx or 4xx, the same on both paths', async () => {
    const seed = fuzzSeed();
    const r = new Prng(seed);
    const broken = ['', '{', '[', '{"title":', 'null', '"x"', '1e400', '{"a":1}}', '\u0000', '{"title":"\ud800"}', '[1,2,', '{"__proto__":{"x":1}}'];
    const types = ['application/json', 'application/json; charset=utf-16', 'application/vnd.x+json', 'text/plain', 'application/x-www-form-urlencoded', ''];
    for (let i = 0; i < 60; i++) {
      const query = Array.from(
        { length: r.int(4) },
        () =>
          `${encodeURIComponent(r.pick(['n', 'price', 'flag', 'day', 'at', 'ref', 'color', 'size', r.string(3)]))}=${encodeURIComponent(r.string(r.int(12)))}`,
      );
      if (r.chance(0.2)) query.push(r.pick(['%E0%A4%A', '%', 'n', '=&=', 'n=1&n=2']));
      const url = `${r.pick(['/echo', '/_invoke/echo', '/_invoke/typed'])}${query.length > 0 ? `?${query.join('&')}` : ''}`;
      const method = url.startsWith('/_invoke/typed') ? r.pick(['GET', 'POST', 'PUT', 'DELETE']) : r.pick(['GET', 'POST']);
      const hasBody = method !== 'GET' && r.chance(0.9);
      const body = hasBody
        ? r.chance(0.5)
          ? r.pick(broken)
          : json(r.chance(0.5) ? value(r, 4096) : { title: value(r, 256, 1), qty: value(r, 64, 1) })
        : undefined;
      const headers: Record<string, string> = hasBody ? { 'content-type': r.pick(types) } : {};
      const answer = await both(base, { name: `seed ${seed} case ${i}: ${method} ${url}`, method, url, headers, body });
      expect(answer.status < 500, `seed ${seed} case ${i}: ${method} ${url} → ${answer.status} ${answer.body.slice(0, 200)}`).toBe(true);
    }
    // Still serving.
    expect((await send(base, '/echo', { name: 'after', url: '' })).status).toBe(200);
  });
});
