/**
 * The agent on several instances (issue 13 "Many instances"): two `svc serve` processes of
 * test/fixtures/apps/agent on one PostgreSQL database and a private `redis-server` started here, and a
 * scripted model server on loopback. An identity's session runs on exactly one instance (a lease in its
 * `_svc_agent_sessions` row): a client connected to B, whose session A runs, connects through B's
 * connect function and chats with A's session over the bus — each message answered once. When A dies
 * (SIGKILL), the next connect on B takes the session over and the thread goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { WebPubSubClient, WebPubSubJsonProtocol } from '@azure/web-pubsub-client';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');

let app: PreparedApp;
let model: ModelServer;
let redis: PrivateRedis | undefined;
let a: TestServer;
let b: TestServer;
let alice: Identity;
let client: WebPubSubClient | undefined;

async function post(server: TestServer, path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(server.url + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  model = await startModelServer();
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(FIXTURE, 'postgresql');
  const env = { ...app.env, REDIS_URL: redis.url, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' };
  a = await serve(app.dir, env);
  b = await serve(app.dir, env);
  alice = await userIdentity(app, a.url, 'alice');
}, 120_000);

afterAll(async () => {
  client?.stop();
  await a?.close();
  await b?.close();
  await redis?.stop();
  await model?.close();
  await app?.cleanup();
});

describe('agent on two instances', () => {
  const events: any[] = [];
  let connectionId = '';
  let channel = '';
  const from = () => events.length;
  const next = (type: string, start: number, timeoutMs = 15_000) => waitFor(() => events.slice(start).find((e) => e.type === type), timeoutMs);

  it('a client on B chats with the session A runs; every message is answered once', async () => {
    const woke = await post(a, '/_invoke/agentAdmin', { op: 'wake', args: JSON.stringify({ identityId: alice.id }) }, alice);
    expect(woke.json).toEqual({ result: { agent: 'idle' } });

    client = new WebPubSubClient(
      { getClientAccessUrl: async () => (await (await fetch(`${b.url}/_rt/ws`, { headers: alice.headers })).json()).url },
      { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
    );
    client.on('connected', (e) => (connectionId = e.connectionId));
    client.on('group-message', (e) => {
      if (typeof e.message.data === 'string') events.push(JSON.parse(e.message.data));
    });
    await client.start();
    await waitFor(() => connectionId);
    const connected = await post(b, '/agentConnect', { connectionId, apiTools: 'none' }, alice);
    expect(connected.status, JSON.stringify(connected.json)).toBe(200);
    channel = connected.json.channel;
    expect(channel).toBe(`agentapp:agent:${alice.id}`);
    // A's session was already running: B forwarded the connect, it did not start a session of its own.
    await new Promise((r) => setTimeout(r, 300));
    expect(events.filter((e) => e.type === 'agent-event')).toEqual([]);

    model.script({ text: ['Hello ', 'from A'] });
    const start = from();
    await client.sendToGroup(channel, { type: 'message', text: 'Who answers?' }, 'json', { noEcho: true });
    await next('turn-completed', start);
    await new Promise((r) => setTimeout(r, 500));
    const turn = events.slice(start);
    expect(turn.filter((e) => e.type === 'turn-started')).toHaveLength(1);
    expect(turn.filter((e) => e.type === 'turn-completed')).toHaveLength(1);
    expect(
      turn
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Hello from A');
    expect(model.requests).toHaveLength(1);

    // B lists the session A runs.
    const listed = await post(b, '/_invoke/agentAdmin', { op: 'list' }, alice);
    expect(listed.json.result).toEqual([expect.objectContaining({ identityId: alice.id, channel })]);
  });

  it('when A dies, the next connect on B takes the session over and the thread goes on', async () => {
    a.child.kill('SIGKILL');
    await new Promise<void>((ok) => (a.child.exitCode !== null ? ok() : a.child.once('exit', () => ok())));
    model.script({ text: ['B here'] });
    const start = from();
    // What a client does when its message is not acknowledged (SPEC §6.3 ack recovery): connect again with it.
    const connected = await post(b, '/agentConnect', { connectionId, apiTools: 'none', message: 'Still there?' }, alice);
    expect(connected.status, JSON.stringify(connected.json)).toBe(200);
    expect(connected.json.channel).toBe(channel);
    await next('turn-completed', start);
    const turn = events.slice(start);
    expect(turn.some((e) => e.type === 'agent-event' && e.event.name === 'started')).toBe(true);
    expect(turn.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
    const contents = model.requests.at(-1)!.body.messages.map((m) => m.content);
    expect(contents).toContain('Who answers?');
    expect(contents.at(-1)).toBe('Still there?');
  });
});
