/**
 * One error mapping at every boundary (issue 20 §5, §7; `answerError` in runtime/errors.ts): with the
 * app's private PostgreSQL (test/support/pg-cluster.ts) stopped, every transport answers 503
 * SERVICE_UNAVAILABLE with the DESIGN §4 body, never 500 — an agent's API tool called in-process as
 * its user (`AgentService.runApiTool`, the call a model's tool call makes), tus uploads, a function
 * whose code lets the API's 503 through, `_token` (RFC 6749 `temporarily_unavailable`) and a plain
 * data route. Then the database comes back and the same calls succeed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { ROOT, runCli } from '../support/cli.js';
import { adminIdentity, createServiceAccount, createUser, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

describe('a database outage answers 503 at every boundary', () => {
  let cluster: PgCluster;
  let dir: string;
  let server: RunningServer;
  let admin: Identity;
  let user: Identity;
  let userId: string;
  let quietId: string; // a user who never signed in: the agent must read it from the database
  let order: string;
  let secret: { clientId: string; clientSecret: string };
  const env = () => ({ DATABASE_URL: cluster.url('shop') });

  beforeAll(async () => {
    cluster = await startPgCluster();
    const c = new pg.Client({ connectionString: cluster.url() });
    await c.connect();
    await c.query('CREATE DATABASE shop');
    await c.end();
    dir = mkdtempSync(join(tmpdir(), 'svc-app-'));
    cpSync(join(ROOT, 'examples/shop'), dir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
    const generated = await runCli(['generate', dir], env());
    expect(generated.code, generated.stderr).toBe(0);
    server = await startServer({
      appDir: dir,
      port: 0,
      env: { ...process.env, ...env(), SHOP_MODEL_URL: 'http://127.0.0.1:9/v1' },
      logger: pino({ level: 'silent' }),
    });
    admin = await adminIdentity({ dir, env: env() }, server.url);
    user = await userIdentity({ dir, env: env() }, server.url, 'ada');
    userId = (await call(server.url, 'GET', '/_me', undefined, user.headers)).json.id;
    quietId = await createUser({ dir, env: env() }, 'quiet', 'quiet-password-1');
    secret = await createServiceAccount({ dir, env: env() }, 'robot');
    const customer = (await call(server.url, 'POST', '/Customer', { name: 'Ada' }, admin.headers)).json.data[0];
    order = (await call(server.url, 'POST', '/Order', { title: 'first', customer: { id: customer } }, user.headers)).json.data[0];
  });
  afterAll(async () => {
    await server?.close();
    await cluster?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const tool = (name: string, args: unknown, actAs = userId) =>
    server.agent.runApiTool({ identityId: actAs, actAs, apiTools: 'all' } as Parameters<typeof server.agent.runApiTool>[0], name, args, false);
  const tusCreate = () =>
    fetch(`${server.url}/Order/${order}/invoice/tus`, {
      method: 'POST',
      headers: { ...user.headers, 'tus-resumable': '1.0.0', 'upload-length': '5' },
    });
  const unavailable = { error: 'the database is unavailable; try again shortly', code: 'SERVICE_UNAVAILABLE' };

  it('answers 503 while the database is down, then serves again', async () => {
    expect((await tool('getOrder', { id: order })).status).toBe(200);
    await cluster.stop();
    try {
      const listed = await tool('listOrder', {});
      expect(listed.status, listed.output).toBe(503);
      expect(JSON.parse(listed.output.slice(4))).toMatchObject(unavailable);
      const got = await tool('getOrder', { id: order });
      expect(got.status, got.output).toBe(503);
      const quiet = await tool('listProduct', {}, quietId);
      expect(quiet.status, quiet.output).toBe(503);
      expect(JSON.parse(quiet.output.slice(4))).toMatchObject(unavailable);

      const upload = await tusCreate();
      const text = await upload.text();
      expect(upload.status, text).toBe(503);
      expect(JSON.parse(text)).toMatchObject(unavailable);
      expect(upload.headers.get('retry-after')).toBe('1');

      // Function code whose `get` meets the outage and lets it through answers 503 too, not 500.
      const viaFunction = await call(server.url, 'GET', `/orderTotal?order=${order}`, undefined, user.headers);
      expect(viaFunction.status, viaFunction.text).toBe(503);
      expect(viaFunction.json).toMatchObject(unavailable);
      expect(viaFunction.headers.get('retry-after')).toBe('1');

      const token = await call(server.url, 'POST', '/_token', {
        grant_type: 'client_credentials',
        client_id: secret.clientId,
        client_secret: secret.clientSecret,
      });
      expect(token.status, token.text).toBe(503);
      expect(token.json).toMatchObject({ error: 'temporarily_unavailable' });
      expect(token.headers.get('retry-after')).toBe('1');

      const route = await call(server.url, 'GET', '/Order', undefined, admin.headers);
      expect(route.status).toBe(503);
      expect(route.json).toMatchObject(unavailable);
    } finally {
      await cluster.start();
    }
    const back = async () => (await tool('getOrder', { id: order })).status;
    const deadline = Date.now() + 10_000;
    let status = await back();
    while (status !== 200 && Date.now() < deadline) status = await back();
    expect(status).toBe(200);
    expect((await tusCreate()).status).toBe(201);
  });
});
