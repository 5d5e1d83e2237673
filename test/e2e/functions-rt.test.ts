/**
 * Real-time from function code (SPEC §4.7 channel table; DESIGN §4 "Real-time from functions"):
 * `ctx.rt.join` (default-export form) and the `rt.send` global (script form) of
 * test/fixtures/apps/functions, served in this process over real HTTP on SQLite, with the real
 * `@azure/web-pubsub-client`. A function may join a client's connection to a private channel and send to
 * it; the client then receives on `fnapp:<channel>` but may neither send there itself nor join such a
 * channel; a receive-only join stays receive-only; an unknown connection or a collection-named channel
 * reaches the code as a `FunctionApiError` with the status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pino } from 'pino';
import { WebPubSubClient, WebPubSubJsonProtocol, SendMessageError, type OnGroupDataMessageArgs } from '@azure/web-pubsub-client';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/functions');

let app: PreparedApp;
let server: RunningServer;
let base: string;
let alice: Identity;
let client: WebPubSubClient;
let connectionId = '';
const got: OnGroupDataMessageArgs['message'][] = [];

async function call(fn: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${base}/${fn}`, { method: 'POST', headers: { ...alice.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

beforeAll(async () => {
  app = await prepareApp(FIXTURE, 'sqlite');
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
  base = server.url;
  alice = await userIdentity(app, base, 'alice');
  client = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: alice.headers })).json()).url },
    { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
  );
  client.on('connected', (e) => (connectionId = e.connectionId));
  client.on('group-message', (e) => got.push(e.message));
  await client.start();
  await waitFor(() => connectionId);
});

afterAll(async () => {
  client?.stop();
  await server?.close();
  await app?.cleanup();
});

describe('ctx.rt from functions', () => {
  it('joins a connection to a private channel receive-only and sends to it; the client cannot send there', async () => {
    const joined = await call('rtJoin', { connectionId, channel: 'room:1', readOnly: true });
    expect(joined).toEqual({ status: 200, json: { joined: { group: 'fnapp:room:1' } } });
    const sent = await call('rtSend', { channel: 'room:1', body: { status: 'shipped' } });
    expect(sent).toEqual({ status: 200, json: { group: 'fnapp:room:1' } });
    await waitFor(() => got.some((m) => m.group === 'fnapp:room:1'));
    expect(got.find((m) => m.group === 'fnapp:room:1')).toMatchObject({ dataType: 'json', data: { status: 'shipped' } });
    const refused = await client.sendToGroup('fnapp:room:1', { mine: true }, 'json').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SendMessageError);
    expect((refused as SendMessageError).errorDetail?.name).toBe('Forbidden');
    const joinRefused = await client.joinGroup('fnapp:room:2').catch((e: unknown) => e);
    expect((joinRefused as SendMessageError).errorDetail?.name).toBe('Forbidden');
  });

  it('a receive-only join of a regular channel stays receive-only when the client joins it itself', async () => {
    expect((await call('rtJoin', { connectionId, channel: 'news', readOnly: true })).status).toBe(200);
    await client.joinGroup('fnapp:news');
    const refused = await client.sendToGroup('fnapp:news', 'hello', 'text').catch((e: unknown) => e);
    expect((refused as SendMessageError).errorDetail?.name).toBe('Forbidden');
    // A read-write join by the function lifts it.
    expect((await call('rtJoin', { connectionId, channel: 'news', readOnly: false })).status).toBe(200);
    await client.sendToGroup('fnapp:news', 'hello', 'text');
    await waitFor(() => got.some((m) => m.group === 'fnapp:news' && m.data === 'hello'));
  });

  it('refusals reach the code as FunctionApiError with the status', async () => {
    const unknown = await call('rtJoin', { connectionId: `${connectionId.split('.')[0]}.nobody`, channel: 'room:1' });
    expect(unknown.json.refused).toMatchObject({ name: 'FunctionApiError', status: 404 });
    const collection = await call('rtJoin', { connectionId, channel: 'Note' });
    expect(collection.json.refused).toMatchObject({ name: 'FunctionApiError', status: 400 });
    expect(collection.json.refused.message).toMatch(/collection/);
    // The script form's throw is the function's failure: a 500 whose body hides the cause.
    const badSend = await call('rtSend', { channel: '', body: 1 });
    expect(badSend.status).toBe(500);
  });
});
