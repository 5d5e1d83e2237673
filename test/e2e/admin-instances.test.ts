/**
 * The admin endpoints across two `svc serve` instances of the secure fixture on one PostgreSQL
 * database and a private Redis (DESIGN §9): `GET /api/_admin/realtime` and `status` on A see B (its
 * presence report over the bus, at most one period — 5 s — old) with B's connection and its channel
 * members; a request answered by B is found in A's log search, marked with B's instance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import WebSocket from 'ws';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer, trustLoopback } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';

/** One presence period (5 s) plus room for a busy machine. */
const SEEN_WITHIN_MS = 8000;

describe('admin endpoints across two instances', () => {
  let app: PreparedApp;
  let redis: PrivateRedis;
  let a: TestServer;
  let b: TestServer;
  let admin: Identity;
  let user: Identity;
  let socket: WebSocket | undefined;

  beforeAll(async () => {
    redis = await PrivateRedis.onFreePort();
    await redis.start();
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), 'postgresql', trustLoopback); // x-request-id of the test is kept
    const env = { ...app.env, REDIS_URL: redis.url };
    // One after the other: the first applies the migrations.
    a = await serve(app.dir, env);
    b = await serve(app.dir, env);
    admin = await adminIdentity(app, a.url);
    user = await userIdentity(app, a.url, 'roamer');
  });
  afterAll(async () => {
    socket?.close();
    await a?.close();
    await b?.close();
    await redis?.stop();
    await app?.cleanup();
  });

  it('shows the other instance, its connections and channel members, and its log lines', async () => {
    const { url } = (await call(b.url, 'GET', '/_rt/ws', undefined, user.headers)).json;
    socket = new WebSocket(url, 'json.webpubsub.azure.v1');
    const connectionId = await new Promise<string>((ok, fail) => {
      socket!.on('message', (data) => {
        const m = JSON.parse(String(data));
        if (m.event === 'connected') ok(m.connectionId);
      });
      socket!.on('error', fail);
    });
    // Joined through A: the call reaches B, which holds the socket.
    expect((await call(a.url, 'POST', '/_rt/join', { connectionId, channel: 'lobby' }, admin.headers)).status).toBeLessThan(300);
    const seen = await waitFor(async () => {
      const r = (await call(a.url, 'GET', '/_admin/realtime', undefined, admin.headers)).json;
      return r.instances.length === 2 && r.connections === 1 && r.channels[0]?.members === 1 ? r : null;
    }, SEEN_WITHIN_MS);
    expect(seen.channels).toEqual([{ name: 'lobby', members: 1 }]);
    const [self, other] = seen.instances;
    expect(self).toMatchObject({ self: true, connections: 0 });
    expect(other).toMatchObject({ self: false, connections: 1, channels: 1 });

    const status = (await call(a.url, 'GET', '/_admin/status', undefined, admin.headers)).json;
    expect(status.instances.map((i: { instance: string }) => i.instance).sort()).toEqual([self.instance, other.instance].sort());

    await call(b.url, 'GET', '/Note', undefined, { ...user.headers, 'x-request-id': 'answered-by-b' });
    const entry = await waitFor(async () => (await call(a.url, 'GET', '/_admin/logs?reqId=answered-by-b', undefined, admin.headers)).json.data[0], 1500);
    expect(entry).toMatchObject({ instance: other.instance, path: '/api/Note', status: 200, identityId: user.id });
  });
});
