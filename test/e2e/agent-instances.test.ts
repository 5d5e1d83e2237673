/**
 * The agent on several instances (issue 13 "Many instances"): two `svc serve` processes of
 * test/fixtures/apps/agent on one PostgreSQL database and a private `redis-server` started here, and a
 * scripted model server on loopback. An identity's session runs on exactly one instance (a lease in its
 * `_svc_agent_sessions` row): a client connected to B, whose session A runs, connects through B's
 * connect function and chats with A's session over the bus — each message answered once. When A dies
 * (SIGKILL), the next connect on B takes the session over and the thread goes on.
 *
 * Issue 20 item 4: a holder whose bus subscription still counts but which never answers (constructed
 * with SIGSTOP: Redis delivers to it, it does not reply — what a SIGKILLed instance looks like until
 * Redis drops its connection) is taken over on the first call, within 30 s, and the turn runs; and
 * two connects for the same identity at the same moment on two instances both succeed and share one
 * session (raced for several identities, so the old 503 would show).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
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
const extraClients: WebPubSubClient[] = [];
const extraServers: TestServer[] = [];
let serverEnv: NodeJS.ProcessEnv = {};

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
  serverEnv = { ...app.env, REDIS_URL: redis.url, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' };
  a = await serve(app.dir, serverEnv);
  b = await serve(app.dir, serverEnv);
  alice = await userIdentity(app, a.url, 'alice');
});

afterAll(async () => {
  client?.stop();
  for (const c of extraClients) c.stop();
  for (const s of extraServers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
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

/** A client of `server` as `who` that records every group message with its group. */
async function groupClient(server: TestServer, who: Identity): Promise<{ connectionId: string; events: { group: string; data: any }[] }> {
  const events: { group: string; data: any }[] = [];
  let connectionId = '';
  const c = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${server.url}/_rt/ws`, { headers: who.headers })).json()).url },
    { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
  );
  extraClients.push(c);
  c.on('connected', (e) => (connectionId = e.connectionId));
  c.on('group-message', (e) => {
    if (typeof e.message.data === 'string') events.push({ group: e.message.group!, data: JSON.parse(e.message.data) });
  });
  await c.start();
  await waitFor(() => connectionId);
  return { connectionId, events };
}

/** `ctx.agent.<op>(args)` on `server` through the fixture's agentAdmin function. */
const agentOp = (server: TestServer, op: string, args: unknown) => post(server, '/_invoke/agentAdmin', { op, args: JSON.stringify(args) }, alice);

/** The model requests whose last message is the user message `text`. */
const requestsFor = (text: string) => model.requests.filter((r) => r.body.messages.at(-1)?.content === text);

describe('agent on two instances: takeover on the first call, and simultaneous connects (issue 20)', () => {
  let c: TestServer;

  beforeAll(async () => {
    c = await serve(app.dir, serverEnv);
    extraServers.push(c);
  }, 60_000);

  it('two connects for one identity at the same moment on B and C both answer 200 and share one session: one turn per message', async () => {
    const onB = await groupClient(b, alice);
    const onC = await groupClient(c, alice);
    const ids = Array.from({ length: 6 }, (_, i) => `race-${i}-${randomUUID()}`);
    const answers = await Promise.all(
      ids.map((identityId) =>
        Promise.all([
          agentOp(b, 'connect', { identityId, connectionId: onB.connectionId, apiTools: 'none', message: `one ${identityId}` }),
          agentOp(c, 'connect', { identityId, connectionId: onC.connectionId, apiTools: 'none', message: `two ${identityId}` }),
        ]),
      ),
    );
    for (const [i, pair] of answers.entries()) {
      for (const answer of pair) {
        expect(answer.status).toBe(200);
        expect(answer.json, JSON.stringify(answer.json)).toEqual({ result: { channel: `agentapp:agent:${ids[i]}`, credits: expect.any(Number) } });
      }
    }
    const listedB = (await agentOp(b, 'list', {})).json.result as { identityId: string }[];
    for (const identityId of ids) {
      const channel = `agentapp:agent:${identityId}`;
      const started = (events: { group: string; data: any }[]) => ofType(events, channel, 'agent-event').filter((e) => e.event.name === 'started');
      // One session: started once, on one instance. The connection that started it joined first and
      // sees both turns; the other joined before its own message was queued and sees at least that turn.
      await waitFor(() => started(onB.events).length + started(onC.events).length >= 1, 20_000);
      expect(started(onB.events).length + started(onC.events).length).toBe(1);
      const [first, second] = started(onB.events).length === 1 ? [onB, onC] : [onC, onB];
      await waitFor(() => ofType(first.events, channel, 'turn-completed').length >= 2 && ofType(second.events, channel, 'turn-completed').length >= 1, 20_000);
      expect(ofType(first.events, channel, 'turn-started')).toHaveLength(2);
      expect(ofType(first.events, channel, 'turn-completed')).toEqual([
        expect.objectContaining({ status: 'completed' }),
        expect.objectContaining({ status: 'completed' }),
      ]);
      expect(listedB.filter((l) => l.identityId === identityId)).toHaveLength(1);
      // Each message one turn.
      expect(requestsFor(`one ${identityId}`)).toHaveLength(1);
      expect(requestsFor(`two ${identityId}`)).toHaveLength(1);
    }
  }, 120_000);

  it('a holder that no longer answers (Redis still delivers to it) is taken over on the first call, and the turn runs within 30 s', async () => {
    const identityId = `frozen-${randomUUID()}`;
    const channel = `agentapp:agent:${identityId}`;
    expect((await agentOp(c, 'wake', { identityId })).json).toEqual({ result: { agent: 'idle' } });
    const onB = await groupClient(b, alice);
    const stoppedAt = Date.now();
    c.child.kill('SIGSTOP');
    try {
      const connected = await agentOp(b, 'connect', { identityId, connectionId: onB.connectionId, apiTools: 'none', message: 'Anyone home?' });
      expect(connected.status).toBe(200);
      expect(connected.json, JSON.stringify(connected.json)).toEqual({ result: { channel, credits: expect.any(Number) } });
      const completed = await waitFor(() => onB.events.find((e) => e.group === channel && e.data.type === 'turn-completed'), 30_000 - (Date.now() - stoppedAt));
      expect(completed.data).toMatchObject({ status: 'completed' });
      expect(onB.events.some((e) => e.group === channel && e.data.type === 'turn-started')).toBe(true);
      expect(Date.now() - stoppedAt).toBeLessThan(30_000);
      expect(requestsFor('Anyone home?')).toHaveLength(1);
    } finally {
      c.child.kill('SIGKILL');
    }
  }, 60_000);
});

/** The agent frames of `type` on `channel` among a client's group messages. */
function ofType(events: { group: string; data: any }[], channel: string, type: string): any[] {
  return events.filter((e) => e.group === channel && e.data.type === type).map((e) => e.data);
}
