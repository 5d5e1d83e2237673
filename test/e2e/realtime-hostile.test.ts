/**
 * Hostile clients against a spawned `svc serve` (issue 20 §1; SPEC §4.7; DESIGN §6): the five inputs
 * that used to end the process — `GET //`, `//%`, `//[` with `Upgrade: websocket`, a reliable Web
 * PubSub recovery whose token has the right length in characters but not in bytes, a hub message whose
 * `type` makes a close reason over 123 bytes — and a hub record that never ends, each answered and
 * closed while the process keeps serving. The seeded fuzz of the same surfaces is in
 * realtime-fuzz.test.ts. Shop on SQLite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareApp, runCli, serve, ROOT, type PreparedApp, type TestServer } from '../support/cli.js';
import { hubRecords, openRaw, rawRequest, RS, upgradeRequest } from '../support/hostile.js';
import { waitFor } from '../support/wait.js';

const SHOP = join(ROOT, 'examples/shop');
const MAX_FRAME = 64 * 1024;

let app: PreparedApp;
let server: TestServer;
let port: number;

/** The process is alive and answers `/api/_health`. */
async function healthy(): Promise<void> {
  expect(server.child.exitCode, server.output()).toBeNull();
  const r = await fetch(`${server.url}/_health`);
  expect(r.status).toBe(200);
  await r.arrayBuffer();
}

async function wsUrl(): Promise<string> {
  return ((await (await fetch(`${server.url}/_rt/ws`)).json()) as { url: string }).url;
}

/** An anonymous hub socket past its handshake. */
async function hubSocket() {
  const { accessToken } = (await (await fetch(`${server.url}/_rt/hub`)).json()) as { accessToken: string };
  const hub = await openRaw(`ws://127.0.0.1:${port}/api/_rt/signalr?access_token=${accessToken}`, [], hubRecords);
  hub.ws.send(JSON.stringify({ protocol: 'json', version: 1 }) + RS);
  await waitFor(() => hub.frames.length > 0);
  expect(hub.frames[0]).toEqual({});
  return hub;
}

beforeAll(async () => {
  app = await prepareApp(SHOP, 'sqlite');
  const settings = JSON.parse(readFileSync(join(app.dir, 'svc.json'), 'utf8'));
  writeFileSync(join(app.dir, 'svc.json'), JSON.stringify({ ...settings, realtime: { maxFrameBytes: MAX_FRAME } }));
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  server = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn' });
  port = Number(new URL(server.url).port);
});

afterAll(async () => {
  await server?.close();
  await app?.cleanup();
});

describe('inputs that used to end the process', () => {
  it('GET //, //% and //[ with Upgrade: websocket answer 404 (no such path), as do their real-time look-alikes', async () => {
    for (const path of ['//', '//%', '//[', '//api/_rt/client', '//%/api/_rt/signalr?id=%', '//[::1]/api/_rt/client']) {
      const answer = await rawRequest(port, upgradeRequest(path));
      expect(answer.status, path).toBe(404);
      await healthy();
    }
  });

  it('a reliable recovery whose token is the right length in characters but not in bytes closes 1008; the connection stays', async () => {
    const live = await openRaw(await wsUrl(), ['json.reliable.webpubsub.azure.v1']);
    await waitFor(() => live.frames.length > 0);
    const { connectionId, reconnectionToken } = live.frames[0];
    expect(reconnectionToken).toHaveLength(32);
    const forged = 'é' + 'a'.repeat(31);
    const thief = await openRaw(
      `ws://127.0.0.1:${port}/api/_rt/client?awps_connection_id=${encodeURIComponent(connectionId)}&awps_reconnection_token=${encodeURIComponent(forged)}`,
      ['json.reliable.webpubsub.azure.v1'],
    );
    expect((await thief.closed).code).toBe(1008);
    await healthy();
    // The real client still has its connection.
    live.ws.send('{"type":"ping"}');
    await waitFor(() => live.frames.some((f) => f.type === 'pong'));
    live.ws.close();
  });

  it('a hub message whose type is 60 × é closes 1007 with a reason cut to 123 bytes', async () => {
    const hub = await hubSocket();
    hub.ws.send(JSON.stringify({ type: 'é'.repeat(60) }) + RS);
    const { code, reason } = await hub.closed;
    expect(code).toBe(1007);
    expect(reason).toMatch(/^unknown message type "é+/);
    expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(123);
    await healthy();
  });

  it('a hub record without its 0x1E is held up to the frame limit (anonymous: 4096 bytes), then the socket closes 1009', async () => {
    const hub = await hubSocket();
    // Each frame is under the anonymous frame limit; together they are over it.
    const chunk = '{"type":1,"target":"' + 'x'.repeat(1000);
    for (let i = 0; i < 8 && hub.ws.readyState === 1; i++) hub.ws.send(chunk);
    const { code, reason } = await hub.closed;
    expect(code).toBe(1009);
    expect(reason).toBe('a message is over 4096 bytes without its 0x1E separator');
    await healthy();
  });
});
