/**
 * Turns that survive a reload (issue 34 §2; DESIGN §7a; docs/agent.md "Joining a running turn"): a
 * scripted turn streams reasoning, text deltas and two API tool calls, slowed down; while it runs, ten
 * new clients (the official `@azure/web-pubsub-client`, each a new connection through the app's
 * connect function) join at random moments. Each gets one `history` frame with the thread so far and
 * the running turn's partial state, then the live frames from `seq + 1` on, with no gap and no
 * duplicate: the text, reasoning and tool states rebuilt from history plus live frames equal what a
 * client connected from the start saw. On one instance (SQLite and PostgreSQL), and across two
 * instances on PostgreSQL + Redis with the late clients' sockets on the instance that does not run the
 * session. Another identity asking for this thread's history is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pino } from 'pino';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { backends } from '../support/backends.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient, postJson } from '../support/chat-client.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');
const LATE_CLIENTS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A turn with reasoning, streamed text around two API tool calls, slow enough to join in the middle
 * (about 2 s); its end is held back until `gate` settles, so every join lands before it.
 */
function scriptSlowTurn(model: ModelServer, gate: Promise<unknown>): void {
  model.script(
    {
      reasoning: ['Looking ', 'at the ', 'shelves.'],
      text: Array.from({ length: 8 }, (_, i) => `first-${i} `),
      toolCalls: [
        { name: 'listBook', args: {} },
        { name: 'listBook', args: { pageSize: 1 } },
      ],
      delayMs: 40,
      usage: { prompt: 20, completion: 10 },
    },
    { text: Array.from({ length: 30 }, (_, i) => `then-${i} `), delayMs: 40, usage: { prompt: 30, completion: 30 }, gate },
  );
}

/** What a client shows of a turn: its text, reasoning and tool calls, from `history` items and/or live frames. */
function shown(frames: any[]): { text: string; thinking: string; tools: string[] } {
  const of = (type: string) =>
    frames
      .filter((f) => f.type === type)
      .map((f) => f.delta)
      .join('');
  return {
    text: of('text'),
    thinking: of('thinking'),
    tools: frames.filter((f) => ['tool-start', 'tool-end'].includes(f.type)).map((f) => `${f.type}:${f.id}`),
  };
}

/** The frames of one turn as `client` received them: from its `turn-started` to its `turn-completed`. */
function turnFrames(client: ChatClient, from: number): any[] {
  const events = client.events.slice(from);
  const start = events.findIndex((e) => e.type === 'turn-started');
  const end = events.findIndex((e) => e.type === 'turn-completed');
  return events.slice(start, end + 1);
}

/**
 * Checks a client that joined mid-turn: one `history` with the running turn, then consecutive `seq`s
 * from `history.seq + 1` to `turn-completed`, and the same text, reasoning and tools as `full`.
 */
function expectResumed(late: ChatClient, full: any[], threadId: string, earlier: string): void {
  const histories = late.events.filter((e) => e.type === 'history');
  expect(histories, 'one history frame').toHaveLength(1);
  const history = histories[0];
  expect(history.threadId).toBe(threadId);
  expect(history.running).toEqual({ pending: [] });
  expect(typeof history.seq).toBe('number');
  // The thread so far: the earlier turn, then this one (its user message and `turn-started`).
  expect(history.items[0]).toEqual({ type: 'user-message', text: earlier });
  const startedAt = history.items.findIndex((i: any) => i.type === 'turn-started');
  expect(history.items[startedAt - 1]).toEqual({ type: 'user-message', text: 'Read me the shelves' });
  const partial = history.items.slice(startedAt);
  const live = late.events.slice(late.events.indexOf(history) + 1).filter((e) => e.seq !== undefined);
  expect(live.length).toBeGreaterThan(0);
  // No gap, no duplicate: seq goes on from the history's, one by one, to the end of the turn.
  expect(live.map((e) => e.seq)).toEqual(live.map((_, i) => history.seq + 1 + i));
  expect(live.at(-1).type).toBe('turn-completed');
  // The snapshot plus what followed is what a client connected throughout saw.
  expect(shown([...partial, ...live])).toEqual(shown(full));
  expect(full[0].seq + full.length - 1).toBe(full.at(-1).seq);
  expect(full.find((e) => e.seq === history.seq + 1)).toMatchObject({ type: live[0].type });
}

/**
 * Runs the slow turn on `observer`'s session (connected through `base`) with `LATE_CLIENTS` clients
 * joining at random moments through `lateBase`.
 */
async function reloadsDuringTurn(
  observer: ChatClient,
  base: string,
  lateBase: string,
  who: Identity,
  model: ModelServer,
  cleanup: ChatClient[],
): Promise<void> {
  const late: ChatClient[] = [];
  model.script({ text: ['Earlier ', 'answer.'] });
  await observer.turn('An earlier question');
  const threadId = (await postJson(base, who, '_invoke/agentAdmin', { op: 'list' })).json.result.find((s: any) => s.identityId === who.id).threadId as string;
  let joined = () => {};
  scriptSlowTurn(model, new Promise<void>((ok) => (joined = ok)));
  const from = observer.events.length;
  await observer.send({ type: 'message', text: 'Read me the shelves' });
  await observer.next('turn-started', from);
  const delaysMs = Array.from({ length: LATE_CLIENTS }, () => 20 + Math.floor(Math.random() * 2000)).sort((x, y) => x - y);
  // The clients join at random points of the turn: in the reasoning, the text, the tool calls, the held end.
  await Promise.all(
    delaysMs.map(async (ms) => {
      await sleep(ms);
      const client = new ChatClient(lateBase, who);
      late.push(client);
      cleanup.push(client);
      await client.connect();
    }),
  );
  joined();
  await observer.next('turn-completed', from, 30_000);
  const full = turnFrames(observer, from);
  expect(shown(full).text).toBe([...Array.from({ length: 8 }, (_, i) => `first-${i} `), ...Array.from({ length: 30 }, (_, i) => `then-${i} `)].join(''));
  expect(shown(full).thinking).toBe('Looking at the shelves.');
  expect(shown(full).tools).toHaveLength(4);
  for (const client of late) {
    await client.next('turn-completed', 0, 15_000);
    expectResumed(client, full, threadId, 'An earlier question');
  }
  // A client that joins once the turn is over gets no history (it asks with thread-resume).
  const after = new ChatClient(lateBase, who);
  cleanup.push(after);
  await after.connect();
  await sleep(300);
  expect(after.events.filter((e) => e.type === 'history')).toEqual([]);
}

for (const backend of backends()) {
  describe(`joining a running turn on one instance (${backend})`, () => {
    let app: PreparedApp;
    let model: ModelServer;
    let server: RunningServer;
    let reader: Identity;
    let other: Identity;
    const clients: ChatClient[] = [];

    beforeAll(async () => {
      model = await startModelServer();
      app = await prepareApp(FIXTURE, backend);
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' },
        logger: pino({ level: 'silent' }),
      });
      reader = await userIdentity(app, server.url, 'reader');
      other = await userIdentity(app, server.url, 'other');
    });

    afterAll(async () => {
      for (const c of clients) c.stop();
      await server?.close();
      await model?.close();
      await app?.cleanup();
    });

    it('ten clients joining at random moments each rebuild the whole turn from history + live frames', async () => {
      const observer = new ChatClient(server.url, reader);
      clients.push(observer);
      await observer.connect();
      await reloadsDuringTurn(observer, server.url, server.url, reader, model, clients);
    }, 60_000);

    it('a client joining while a UI tool call waits finds it pending in the history and answers it; the turn goes on', async () => {
      const observer = new ChatClient(server.url, reader);
      clients.push(observer);
      await observer.connect();
      model.script({ text: ['Showing it. '], toolCalls: [{ name: 'showBook', args: { id: 'b-1' } }] }, { text: ['Shown.'] });
      const from = observer.events.length;
      await observer.send({ type: 'message', text: 'Show me b-1' });
      // The observer sees the call and, like a page being reloaded, never answers it.
      const call = await observer.next('tool-call', from);
      const reloaded = new ChatClient(server.url, reader);
      clients.push(reloaded);
      await reloaded.connect();
      const history = await reloaded.next('history');
      expect(history.running.pending).toEqual([{ type: 'tool-call', tool: 'showBook', params: { id: 'b-1' }, reqId: call.reqId }]);
      const partial = history.items.slice(history.items.findLastIndex((i: any) => i.type === 'turn-started'));
      expect(partial).toEqual([{ type: 'turn-started' }, { type: 'text', delta: 'Showing it. ' }, { type: 'tool-start', name: 'showBook', id: call.reqId }]);
      // The same socket connecting again (ack recovery) is a member already: no second history.
      expect((await postJson(server.url, reader, 'agentConnect', { connectionId: reloaded.connectionId })).status).toBe(200);
      await reloaded.send({ type: 'tool-result', reqId: call.reqId, result: { shown: 'b-1' } });
      expect(await reloaded.next('turn-completed')).toMatchObject({ status: 'completed', seq: expect.any(Number) });
      expect(JSON.stringify(model.requests.at(-1)!.body.messages.findLast((m) => m.role === 'tool')!.content)).toContain('b-1');
      // One history; the rest of the turn came live.
      expect(reloaded.events.filter((e) => e.type === 'history')).toHaveLength(1);
    }, 30_000);

    it("another identity asking for this identity's thread is refused, whatever the threadId looks like", async () => {
      const listed = await postJson(server.url, reader, '_invoke/agentAdmin', { op: 'list' });
      const threadId = listed.json.result.find((s: any) => s.identityId === reader.id).threadId as string;
      expect(threadId).toEqual(expect.any(String));
      const intruder = new ChatClient(server.url, other);
      clients.push(intruder);
      await intruder.connect();
      expect(intruder.channel).not.toContain(reader.id);
      for (const asked of [threadId, ` ${threadId}`, threadId.toUpperCase(), 42, null, { id: threadId }, [threadId], `${threadId}' OR '1'='1`]) {
        const from = intruder.events.length;
        await intruder.send({ type: 'thread-resume', threadId: asked });
        const error = await intruder.next('error', from);
        expect(error.message).toContain('of this identity');
      }
      await sleep(200);
      expect(intruder.events.filter((e) => e.type === 'history')).toEqual([]);
      // Nor can it join the other identity's channel from its socket.
      await expect(intruder['client'].joinGroup(`agentapp:agent:${reader.id}`)).rejects.toThrow();
    }, 30_000);
  });
}

describe('joining a running turn across two instances (PostgreSQL + Redis)', () => {
  let app: PreparedApp;
  let model: ModelServer;
  let redis: PrivateRedis | undefined;
  let a: TestServer;
  let b: TestServer;
  let alice: Identity;
  const clients: ChatClient[] = [];

  beforeAll(async () => {
    model = await startModelServer();
    redis = await PrivateRedis.onFreePort();
    await redis.start();
    app = await prepareApp(FIXTURE, 'postgresql');
    const env = { ...app.env, REDIS_URL: redis.url, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' };
    [a, b] = await Promise.all([serve(app.dir, env), serve(app.dir, env)]);
    alice = await userIdentity(app, a.url, 'alice');
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) c.stop();
    await a?.close();
    await b?.close();
    await redis?.stop();
    await model?.close();
    await app?.cleanup();
  });

  it('clients whose sockets are on B join the turn A runs at random moments and rebuild it whole', async () => {
    const observer = new ChatClient(a.url, alice);
    clients.push(observer);
    await observer.connect();
    await reloadsDuringTurn(observer, a.url, b.url, alice, model, clients);
  }, 90_000);
});
