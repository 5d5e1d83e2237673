/**
 * Liveness and readiness (README "Operations"): `/api/_health` and `/api/_ready` on a real server per
 * backend, anonymous and uncached; readiness turns 503 when a migration the server knows is missing
 * from the database, and when the configured Redis does not answer. The framework-free checks of
 * `runtime/http/health.ts` against the real Redis on 6379 and a closed port. The database going away
 * under a running server is covered by pg-restart.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { freePort } from '../support/pg-cluster.js';
import { call } from '../support/scenario.js';
import { pingRedis, readiness } from '../../dist/runtime/http/health.js';

const REDIS = 'redis://127.0.0.1:6379';

/** Runs one statement on the app's database, the way an operator's tool would. */
async function sqlOn(app: PreparedApp, backend: Backend, text: string, values: unknown[] = []): Promise<void> {
  const url = app.env.DATABASE_URL as string;
  if (backend === 'sqlite') {
    const db = new Database(url.slice('file:'.length));
    try {
      db.prepare(text).run(...values);
    } finally {
      db.close();
    }
    return;
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  let n = 0;
  try {
    await c.query(
      text.replace(/\?/g, () => `$${++n}`),
      values,
    );
  } finally {
    await c.end();
  }
}

function healthSuite(backend: Backend): void {
  describe(`health and readiness on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/catalog'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('answers liveness and readiness anonymously, even with a bad token, and never cached', async () => {
      for (const headers of [{}, { authorization: 'Bearer not-a-token' }] as Record<string, string>[]) {
        const live = await call(base, 'GET', '/_health', undefined, headers);
        expect(live.status).toBe(200);
        expect(live.json).toEqual({ status: 'ok' });
        expect(live.headers.get('cache-control')).toBe('no-store');
        const ready = await call(base, 'GET', '/_ready', undefined, headers);
        expect(ready.status, ready.text).toBe(200);
        expect(ready.json).toEqual({ status: 'ready', database: 'ok', migrations: 'ok' });
      }
      expect((await call(base, 'POST', '/_ready', {})).status).toBe(404);
    });

    it('is not ready while a migration the server knows is missing from the database, and ready again once applied', async () => {
      const migrations = readdirSync(join(app.dir, 'migrations', backend), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort();
      const last = migrations[migrations.length - 1];
      // As if the database were restored from a backup older than the last migration.
      await sqlOn(app, backend, 'UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = ?', [last]);
      try {
        const ready = await call(base, 'GET', '/_ready');
        expect(ready.status, ready.text).toBe(503);
        expect(ready.headers.get('retry-after')).toBe('5');
        expect(ready.json).toMatchObject({
          code: 'SERVICE_UNAVAILABLE',
          status: 'unavailable',
          database: 'ok',
          migrations: 'pending',
          details: [{ path: '/migrations', message: '1 migration(s) not applied: run svc migrate' }],
        });
        expect(ready.json.error).toBe('not ready: migrations not available');
        expect((await call(base, 'GET', '/_health')).status).toBe(200);
      } finally {
        await sqlOn(app, backend, 'UPDATE _prisma_migrations SET finished_at = started_at WHERE migration_name = ?', [last]);
      }
      expect((await call(base, 'GET', '/_ready')).status).toBe(200);
    });

    it('checks Redis when it is configured: "ok" when it answers PING, 503 "down" when it does not', async () => {
      const withRedis = await serve(app.dir, { ...app.env, REDIS_URL: REDIS });
      const closed = await serve(app.dir, { ...app.env, REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
      try {
        const ok = await call(withRedis.url, 'GET', '/_ready');
        expect(ok.status, ok.text).toBe(200);
        expect(ok.json).toEqual({ status: 'ready', database: 'ok', migrations: 'ok', redis: 'ok' });
        const down = await call(closed.url, 'GET', '/_ready');
        expect(down.status, down.text).toBe(503);
        expect(down.json).toEqual({
          error: 'not ready: redis not available',
          code: 'SERVICE_UNAVAILABLE',
          status: 'unavailable',
          database: 'ok',
          migrations: 'ok',
          redis: 'down',
          details: [{ path: '/redis', message: 'Redis did not answer PING within 2 s' }],
        });
        expect(down.text).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
      } finally {
        await withRedis.close();
        await closed.close();
      }
    });
  });
}

describe('readiness checks (runtime/http/health.ts)', () => {
  const healthy = { ping: async () => {}, pendingMigrations: async () => [] };

  it('bounds each check by timeoutMs and reports a database that does not answer', async () => {
    const started = Date.now();
    const hung = await readiness({ ...healthy, ping: () => new Promise<void>(() => {}), timeoutMs: 200 });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(hung.status).toBe(503);
    expect(hung.body).toMatchObject({
      database: 'down',
      code: 'SERVICE_UNAVAILABLE',
      details: [{ path: '/database', message: 'the database did not answer within 0.2 s' }],
    });
    const refused = await readiness({
      ping: async () => {
        throw new Error('connect ECONNREFUSED');
      },
      pendingMigrations: async () => {
        throw new Error('down');
      },
    });
    expect(refused.body).toMatchObject({ database: 'down', migrations: 'unknown' });
    expect(JSON.stringify(refused.body)).not.toContain('ECONNREFUSED');
  });

  it('answers 503 at once while the instance drains before it stops, without running the checks', async () => {
    let pinged = false;
    const drained = await readiness({
      ping: async () => {
        pinged = true;
      },
      pendingMigrations: async () => [],
      draining: () => true,
    });
    expect(drained.status).toBe(503);
    expect(drained.body).toEqual({
      error: 'not ready: the server is shutting down',
      code: 'SERVICE_UNAVAILABLE',
      details: [{ path: '/', message: 'the server is shutting down' }],
      status: 'unavailable',
      database: 'unknown',
      migrations: 'unknown',
      draining: true,
    });
    expect(pinged).toBe(false);
    expect((await readiness({ ...healthy, draining: () => false })).status).toBe(200);
  });

  it('pings a real Redis over RESP, and fails on a closed port, a wrong password and a silent server', async () => {
    await expect(pingRedis(REDIS)).resolves.toBeUndefined();
    await expect(pingRedis(`redis://127.0.0.1:${await freePort()}`)).rejects.toThrow(/ECONNREFUSED/);
    await expect(pingRedis('redis://:wrong-password@127.0.0.1:6379')).rejects.toThrow(/Redis refused/);
    const silent = (await import('node:net')).createServer(() => {});
    await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
    try {
      const port = (silent.address() as { port: number }).port;
      await expect(pingRedis(`redis://127.0.0.1:${port}`, 200)).rejects.toThrow('Redis did not answer');
    } finally {
      silent.close();
    }
  });
});

for (const backend of backends()) healthSuite(backend);
