/**
 * The Prometheus metrics (docs/operations.md "Metrics and traces"), once per backend against a spawned
 * `svc serve` of the functions fixture: `GET /api/_metrics` is admin-only (401 anonymous, 403 a user);
 * after known traffic the request histogram counts each route template, method and status exactly
 * (collection list and item, a function, an unknown route), function calls and database statements
 * are counted; fuzzed paths never make a new `route` label value. Then (SQLite) the metrics on a port
 * of their own (svc.json `metrics.port`, moved to a free port by `SVC_METRICS_PORT=0`): served there
 * without auth and not on the API's port; and `metrics: false` turns them off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { waitFor } from '../support/wait.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/functions');
const REQUESTS = 'svc_http_request_duration_seconds_count';

/** One sample's value from a Prometheus text body (0 when absent); `labels` must all match. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** The values of the `route` label in a body. */
function routes(text: string): Set<string> {
  return new Set([...text.matchAll(/^svc_http_request_duration_seconds_count\{[^}]*route="([^"]*)"/gm)].map((m) => m[1]));
}

function metricsSuite(backend: Backend): void {
  describe(`metrics on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let user: Identity;
    const scrape = async () => {
      const r = await call(base, 'GET', '/_metrics', undefined, admin.headers);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain('text/plain');
      return r.text;
    };

    beforeAll(async () => {
      app = await prepareApp(FIXTURE, backend);
      server = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn' });
      base = server.url;
      admin = await adminIdentity(app, base);
      user = await userIdentity(app, base, 'metrics-user');
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('refuses anonymous callers (401) and non-admins (403)', async () => {
      expect((await call(base, 'GET', '/_metrics')).status).toBe(401);
      const r = await call(base, 'GET', '/_metrics', undefined, user.headers);
      expect(r.status).toBe(403);
      expect(r.json).toMatchObject({ code: 'FORBIDDEN' });
    });

    it('counts known traffic by route template, method and status', async () => {
      const created = await call(base, 'POST', '/Note', { title: 'counted' });
      expect(created.status).toBe(201);
      const id = (created.json as { data: string[] }).data[0];
      const before = await scrape();
      for (let i = 0; i < 5; i++) expect((await call(base, 'GET', '/Note?pageSize=2')).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await call(base, 'GET', `/Note/${id}`)).status).toBe(200);
      expect((await call(base, 'GET', '/Note/no-such-id')).status).toBe(404);
      for (let i = 0; i < 2; i++) expect((await call(base, 'GET', '/echo')).status).toBe(200);
      expect((await call(base, 'GET', '/noSuchThing')).status).toBe(404);
      const after = await scrape();
      const grew = (labels: Record<string, string>) => sample(after, REQUESTS, labels) - sample(before, REQUESTS, labels);
      expect(grew({ route: '/api/Note', method: 'GET', status: '200' })).toBe(5);
      expect(grew({ route: '/api/Note/{id}', method: 'GET', status: '200' })).toBe(3);
      expect(grew({ route: '/api/Note/{id}', method: 'GET', status: '404' })).toBe(1);
      expect(grew({ route: '/api/echo', method: 'GET', status: '200' })).toBe(2);
      expect(grew({ route: '/api/{unknown}', method: 'GET', status: '404' })).toBe(1);
      // The first scrape itself was counted once it had been answered.
      expect(grew({ route: '/api/_metrics', method: 'GET', status: '200' })).toBe(1);
      const calls = (t: string) => sample(t, 'svc_function_duration_seconds_count', { function: 'echo', outcome: 'ok' });
      expect(calls(after) - calls(before)).toBe(2);
      expect(sample(after, 'svc_db_statement_duration_seconds_count') - sample(before, 'svc_db_statement_duration_seconds_count')).toBeGreaterThanOrEqual(5);
      // The other families are there from the start: pool (PostgreSQL), real-time, agent, bus, event loop.
      if (backend === 'postgresql') expect(sample(after, 'svc_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
      for (const name of [
        'svc_realtime_connections',
        'svc_realtime_channels',
        'svc_realtime_slow_readers_dropped_total',
        'svc_agent_sessions',
        'svc_nodejs_eventloop_lag_seconds',
        'svc_process_cpu_seconds_total',
      ])
        expect(after, name).toMatch(new RegExp(`^${name} `, 'm'));
      for (const name of [
        'svc_realtime_messages_total',
        'svc_bus_messages_total',
        'svc_agent_turns_total',
        'svc_agent_tokens_total',
        'svc_agent_credits_total',
      ])
        expect(after, name).toContain(`# TYPE ${name} counter`);
    });

    it('gives fuzzed paths no new route label value, and answers them 4xx', async () => {
      const prefixes = ['/api/', '/api/Note/', '/api/_admin/', '/api/_invoke/', '/api/echo/', '/', '/_/', '/api/_auth/', '/login/'];
      const origin = base.replace(/\/api$/, '');
      // Every kind of route a random path can fall into, once, before the fuzz.
      for (const prefix of prefixes) for (const rest of ['x', 'x/y']) expect((await fetch(origin + prefix + rest)).status).toBeLessThan(500);
      const known = routes(await scrape());
      const seed = fuzzSeed();
      const r = new Prng(seed);
      for (let i = 0; i < 120; i++) {
        const segment = r.chance(0.2) ? r.pick(['%', '%E0%A4%A', '..', '%00', '']) : encodeURIComponent(r.string(1 + r.int(20)));
        const path = `${r.pick(prefixes)}${segment}${r.chance(0.3) ? `/${encodeURIComponent(r.string(3))}` : ''}`;
        const answer = await fetch(origin + path, { method: r.pick(['GET', 'POST', 'DELETE', 'PATCH']), headers: admin.headers });
        await answer.arrayBuffer();
        expect(answer.status, `seed ${seed}: ${path}`).toBeLessThan(500);
      }
      const after = routes(await scrape());
      expect(
        [...after].filter((route) => !known.has(route)),
        `seed ${seed}`,
      ).toEqual([]);
    });
  });
}

for (const backend of backends()) metricsSuite(backend);

describe('metrics settings', () => {
  let ported: PreparedApp;
  let off: PreparedApp;
  const servers: TestServer[] = [];
  const withMetrics = (metrics: unknown) => (dir: string) => {
    const file = join(dir, 'svc.json');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), metrics }));
  };
  beforeAll(async () => {
    [ported, off] = await Promise.all([prepareApp(FIXTURE, 'sqlite', withMetrics({ port: 9464 })), prepareApp(FIXTURE, 'sqlite', withMetrics(false))]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await Promise.all([ported?.cleanup(), off?.cleanup()]);
  });

  it('serves them on a port of their own, without auth, and not on the API port', async () => {
    const app = ported;
    // SVC_METRICS_PORT moves svc.json's port (as PORT does the API's): any free one here.
    const server = await serve(app.dir, { ...app.env, SVC_METRICS_PORT: '0' });
    servers.push(server);
    // The log line may reach stdout after the banner (pino writes asynchronously).
    const url = await waitFor(() => /metrics at (http:\/\/\S+?)"/.exec(server.output())?.[1], 5000);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect((await call(server.url, 'GET', '/Note')).status).toBe(200);
    const res = await fetch(url!);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(sample(text, REQUESTS, { route: '/api/Note', method: 'GET', status: '200' })).toBe(1);
    expect((await fetch(url!, { method: 'POST' })).status).toBe(405);
    const other = await fetch(url!.replace('/metrics', '/other'));
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ code: 'NOT_FOUND' });
    const admin = await adminIdentity(app, server.url);
    expect((await call(server.url, 'GET', '/_metrics', undefined, admin.headers)).status).toBe(404);
  });

  it('turns them off with metrics: false', async () => {
    const app = off;
    const server = await serve(app.dir, app.env);
    servers.push(server);
    const admin = await adminIdentity(app, server.url);
    expect((await call(server.url, 'GET', '/_metrics', undefined, admin.headers)).status).toBe(404);
    expect(server.output()).not.toContain('metrics at');
  });
});
