/**
 * The embedded agent end to end (issue 13; SPEC §4.11, §4.12, §6.3, §6.4; DESIGN §7): the fixture app
 * test/fixtures/apps/agent served over real HTTP on SQLite and PostgreSQL, a real `@azure/web-pubsub-client` that
 * follows the §4.12 flow (`_me`, `_rt/ws`, connected, the app's connect function, the channel), and a
 * scripted OpenAI-compatible model server on loopback driving every event: streamed text, reasoning,
 * API tools under access rules (in-process, as the user), a UI tool round trip, `update_plan`, provider
 * retries and failures, cancel, threads (list, resume, new, rollback, compact) surviving a restart,
 * ack recovery, the stats callback, and `ctx.agent` from function code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import WebSocket from 'ws';
import { prepareApp, ROOT, runCli, type PreparedApp } from '../support/cli.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { backends } from '../support/backends.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient, postJson, textOf } from '../support/chat-client.js';
import { EventSchemas } from '@ag-ui/core/schemas';
import { agUiAdapter, startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');

let app: PreparedApp;
let model: ModelServer;
let server: RunningServer;
let base: string;
let reader: Identity;
let writer: Identity;
let hooks: Server;
let hookUrl = '';
const callbacks: any[] = [];

async function start(): Promise<void> {
  server = await startServer({
    appDir: app.dir,
    port: 0,
    env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'test-key-1' },
    logger: pino({ level: 'silent' }),
  });
  base = server.url;
}

const post = (who: Identity, fn: string, body: unknown) => postJson(base, who, fn, body);

/** `ctx.agent.<op>(args)` through the fixture's agentAdmin function. */
async function agentOp(who: Identity, op: string, args?: unknown): Promise<any> {
  const r = await post(who, '_invoke/agentAdmin', { op, ...(args !== undefined && { args: JSON.stringify(args) }) });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json;
}

for (const backend of backends()) {
  describe(`agent on ${backend}`, () => {
    beforeAll(async () => {
      model = await startModelServer();
      hooks = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          callbacks.push({ path: req.url, body: JSON.parse(body) });
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((ok) => hooks.listen(0, '127.0.0.1', ok));
      hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/stats`;
      callbacks.length = 0;
      app = await prepareApp(FIXTURE, backend);
      await start();
      reader = await userIdentity(app, base, 'reader');
      writer = await userIdentity(app, base, 'writer', ['writer']);
    });

    afterAll(async () => {
      await server?.close();
      await model?.close();
      hooks?.close();
      await app?.cleanup();
    });

    describe('agent: connect, stream, tools', () => {
      let chat: ChatClient;

      afterAll(() => chat?.stop());

      it('connect answers { channel, credits }, joins the connection read-write, and status reports idle', async () => {
        chat = new ChatClient(base, writer);
        const connected = await chat.connect({ callbackUrl: hookUrl });
        expect(connected).toEqual({ channel: `agentapp:agent:${writer.id}`, credits: 0 });
        expect(chat.events.some((e) => e.type === 'agent-event' && e.event.name === 'started' && Number.isInteger(e.event.at))).toBe(true);
        await chat.send({ type: 'status' });
        const status = await chat.next('status');
        expect(status).toMatchObject({ type: 'status', agent: 'idle', credits: 0, sessionCredits: 0, _from: 'agent' });
      });

      it('streams text and reasoning deltas; the model gets the instructions, the app description and the tools', async () => {
        model.script({ reasoning: ['Let me ', 'think.'], text: ['Hello', ', ', 'reader!'], usage: { prompt: 1200, completion: 30, cached: 200 } });
        const events = await chat.turn('Hi there');
        const types = events.map((e) => e.type);
        expect(types[0]).toBe('turn-started');
        expect(types).toEqual(expect.arrayContaining(['thinking-start', 'thinking', 'thinking-end', 'text', 'turn-completed']));
        expect(types.indexOf('thinking-end')).toBeLessThan(types.indexOf('text'));
        expect(textOf(events)).toBe('Hello, reader!');
        expect(events.filter((e) => e.type === 'thinking').map((e) => e.delta)).toEqual(['Let me ', 'think.']);
        expect(events.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
        const request = model.requests.at(-1)!;
        expect(request.body.model).toBe('small-1');
        expect(request.headers.authorization).toBe('Bearer test-key-1');
        expect(request.body.messages[0].role).toBe('system');
        expect(String(request.body.messages[0].content)).toContain('You are the librarian of the agentapp test library.');
        expect(String(request.body.messages[0].content)).toContain('collection Book: title (string), author (string)');
        expect(request.body.messages.at(-1)).toEqual({ role: 'user', content: 'Hi there' });
        const toolNames = request.body.tools!.map((t) => t.function.name);
        expect(toolNames).toEqual(expect.arrayContaining(['listBook', 'createBook', 'call_agentConnect_post', 'showBook', 'update_plan']));
        const showBook = request.body.tools!.find((t) => t.function.name === 'showBook')!;
        expect(showBook.function.description).toBe('Shows one book on the page');
        expect(showBook.function.parameters).toMatchObject({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] });
      });

      it('posts the stats callback at turn-started and turn-completed with every field', async () => {
        await waitFor(() => callbacks.filter((c) => c.body.event === 'turn-completed').length >= 1);
        const started = callbacks.find((c) => c.body.event === 'turn-started')!.body;
        const completed = callbacks.find((c) => c.body.event === 'turn-completed')!.body;
        expect(started).toMatchObject({ event: 'turn-started', apiName: 'agentapp', identityId: writer.id, credits: 0, sessionCredits: 0 });
        expect(started.apiId).toMatch(/^[0-9a-f-]{36}$/);
        expect(completed).toMatchObject({
          apiId: started.apiId,
          threadId: started.threadId,
          status: 'completed',
          error: null,
          sessionCreditsLimit: 0,
          toolCalls: [],
        });
        // base rung: ceil(1000/1000 × 15 + 200/1000 × 4 + 30/1000 × 60) = ceil(15 + 0.8 + 1.8) = 18
        expect(completed.turnCreditsConsumed).toBe(18);
        expect(completed.sessionCreditsUsed).toBe(18);
        expect(completed.turnDurationMs).toBeGreaterThanOrEqual(0);
      });

      it('API tools run in-process as the user: a permitted write is created by them and notified, a refused one reaches the model as 403', async () => {
        const listen = await post(writer, 'Book/_listen', { connectionId: chat.connectionId, type: 'ws' });
        expect(listen.status, JSON.stringify(listen.json)).toBe(200);
        model.script(
          { toolCalls: [{ name: 'createBook', args: { body: { title: 'Dune', author: 'Herbert' } } }] },
          { toolCalls: [{ name: 'listBook', args: { filter: 'title eq "Dune"' } }] },
          { text: ['Added Dune.'] },
        );
        const events = await chat.turn('Add Dune');
        const starts = events.filter((e) => e.type === 'tool-start');
        expect(starts.map((e) => e.name)).toEqual(['createBook', 'listBook']);
        // agent.approval unset is `auto`: the write runs without an approval request (issue 34 §1).
        expect(events.some((e) => e.type === 'approval-request')).toBe(false);
        expect(events.filter((e) => e.type === 'tool-end').map((e) => e.id)).toEqual(starts.map((e) => e.id));
        const list = await (await fetch(`${base}/Book?filter=${encodeURIComponent('title eq "Dune"')}`, { headers: writer.headers })).json();
        expect(list.data).toHaveLength(1);
        expect(list.data[0].createdBy).toBe(writer.id);
        // The tool's write went through the post-commit notification path of HTTP writes.
        await waitFor(() => chat.others.some((m) => JSON.stringify(m.data).includes(list.data[0].id)));
        const toolMessages = model.requests.at(-1)!.body.messages.filter((m) => m.role === 'tool');
        expect(String(toolMessages.at(-1)!.content)).toContain('Dune');

        // The reader may not create books: the tool answers the model 403 and nothing is written.
        const readerChat = new ChatClient(base, reader);
        await readerChat.connect();
        model.script({ toolCalls: [{ name: 'createBook', args: { body: { title: 'Forbidden' } } }] }, { text: ['I may not.'] });
        await readerChat.turn('Add a book');
        const toolResult = model.requests
          .at(-1)!
          .body.messages.filter((m) => m.role === 'tool')
          .at(-1)!;
        expect(String(toolResult.content)).toMatch(/^403 /);
        const forbidden = await (await fetch(`${base}/Book?filter=${encodeURIComponent('title eq "Forbidden"')}`, { headers: writer.headers })).json();
        expect(forbidden.data).toHaveLength(0);
        readerChat.stop();
      });

      it('an undeclared or wrong-typed argument answers the model 400 without calling the API', async () => {
        model.script(
          { toolCalls: [{ name: 'createBook', args: { body: { title: 'Ghost' }, sneaky: true } }] },
          { toolCalls: [{ name: 'listBook', args: { pageSize: 'many' } }] },
          { text: ['Sorry.'] },
        );
        await chat.turn('Break things');
        const results = model.requests
          .at(-1)!
          .body.messages.filter((m) => m.role === 'tool')
          .slice(-2);
        expect(String(results[0].content)).toMatch(/^400 .*undeclared argument \\"sneaky\\"/);
        expect(String(results[1].content)).toMatch(/^400 .*pageSize/);
        const ghost = await (await fetch(`${base}/Book?filter=${encodeURIComponent('title eq "Ghost"')}`, { headers: writer.headers })).json();
        expect(ghost.data).toHaveLength(0);
      });

      it('a UI tool goes to the client as tool-call with reqId and its tool-result reaches the model', async () => {
        model.script({ toolCalls: [{ name: 'showBook', args: { id: 'b-1' } }] }, { text: ['Shown.'] });
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'Show it' });
        const call = await chat.next('tool-call', from);
        expect(call).toMatchObject({ tool: 'showBook', params: { id: 'b-1' } });
        expect(typeof call.reqId).toBe('string');
        await chat.send({ type: 'tool-result', reqId: call.reqId, result: { shown: true } });
        await chat.next('turn-completed', from);
        const result = model.requests
          .at(-1)!
          .body.messages.filter((m) => m.role === 'tool')
          .at(-1)!;
        expect(String(result.content)).toContain('"shown":true');
      });

      it('update_plan emits plan-updated with the full snapshot', async () => {
        model.script(
          {
            toolCalls: [
              {
                name: 'update_plan',
                args: {
                  steps: [
                    { step: 'Find the book', status: 'completed' },
                    { step: 'Show it', status: 'inProgress' },
                  ],
                  explanation: 'Two steps',
                },
              },
            ],
          },
          { text: ['Done.'] },
        );
        const events = await chat.turn('Plan it');
        expect(events.find((e) => e.type === 'plan-updated')).toMatchObject({
          steps: [
            { step: 'Find the book', status: 'completed' },
            { step: 'Show it', status: 'inProgress' },
          ],
          explanation: 'Two steps',
        });
      });

      it('a provider failure is retried with willRetry, and a lasting one fails the turn with an error', async () => {
        model.script({ status: 503 }, { text: ['Recovered.'] });
        const retried = await chat.turn('Try again');
        expect(retried.find((e) => e.type === 'error')).toMatchObject({ willRetry: true });
        expect(retried.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
        expect(textOf(retried)).toBe('Recovered.');

        model.script({ status: 500 }, { status: 500 }, { status: 500 });
        const failed = await chat.turn('Fail please');
        const errors = failed.filter((e) => e.type === 'error');
        expect(errors.at(-1).willRetry).toBeUndefined();
        expect(failed.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'failed', error: expect.stringContaining('500') });
      });

      it('cancel ends the running turn as failed with error "cancelled"', async () => {
        model.script({ text: ['Still going'], hang: true });
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'Long story' });
        await chat.next('text', from);
        await chat.send({ type: 'cancel' });
        expect(await chat.next('turn-completed', from)).toMatchObject({ status: 'failed', error: 'cancelled' });
      });

      it('effort and fast reach the model request as reasoning_effort', async () => {
        await chat.send({ type: 'fast' });
        await chat.turn('Quick one');
        expect(model.requests.at(-1)!.body.reasoning_effort).toBe('low');
        await chat.turn('Normal one');
        expect(model.requests.at(-1)!.body.reasoning_effort).toBeUndefined();
        await chat.send({ type: 'effort', level: 'high' });
        await chat.turn('Hard one');
        expect(model.requests.at(-1)!.body.reasoning_effort).toBe('high');
      });

      it('a repeated message id is acknowledged again and answered once; a resent connect message too', async () => {
        const id = randomUUID();
        const before = model.requests.length;
        await chat.turn('Only once', id);
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'Only once', id });
        await waitFor(() => chat.events.slice(from).some((e) => e.type === 'ack' && e.id === id));
        // Ack recovery through connect: the same text again is not a second turn.
        await post(writer, 'agentConnect', { connectionId: chat.connectionId, message: 'Only once' });
        await new Promise((r) => setTimeout(r, 500));
        expect(model.requests.length).toBe(before + 1);
        expect(chat.events.slice(from).some((e) => e.type === 'turn-started')).toBe(false);
      });
      it('the AG-UI adapter turns this real session into events @ag-ui/core accepts, one run per turn', () => {
        const adapt = agUiAdapter(chat.channel);
        const events = chat.events.flatMap((e) => adapt(e));
        for (const e of events) expect(() => EventSchemas.parse(e), JSON.stringify(e)).not.toThrow();
        const turns = chat.events.filter((e) => e.type === 'turn-started').length;
        expect(turns).toBeGreaterThan(5);
        expect(events.filter((e) => e.type === 'RUN_STARTED')).toHaveLength(turns);
        expect(events.filter((e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR')).toHaveLength(turns);
      });
    });

    describe('agent: raw WebSocket', () => {
      it('the §4.12 flow over a raw socket: acks, string data with _from, unknown fields ignored; a relative callbackUrl reaches the app', async () => {
        const gina = await userIdentity(app, base, `gina-${backend}`);
        const { url } = await (await fetch(`${base}/_rt/ws`, { headers: gina.headers })).json();
        const ws = new WebSocket(url, 'json.webpubsub.azure.v1');
        const frames: any[] = [];
        ws.on('message', (d) => frames.push(JSON.parse(String(d))));
        const connected = await waitFor(() => frames.find((f) => f.type === 'system' && f.event === 'connected'));
        const r = await post(gina, 'agentConnect', { connectionId: connected.connectionId, apiTools: 'none', callbackUrl: '/api/statsHook' });
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        const channel = r.json.channel;
        const events = () => frames.filter((f) => f.type === 'message' && f.group === channel).map((f) => f.data);
        expect(events().every((d) => typeof d === 'string')).toBe(true);
        model.script({ text: ['Raw ', 'reply'] });
        ws.send(
          JSON.stringify({
            type: 'sendToGroup',
            group: channel,
            dataType: 'json',
            data: { type: 'message', text: 'raw hello', future: 1 },
            ackId: 7,
            noEcho: true,
          }),
        );
        await waitFor(() => frames.find((f) => f.type === 'ack' && f.ackId === 7 && f.success === true));
        await waitFor(() => events().some((d) => JSON.parse(d).type === 'turn-completed'), 10_000);
        const parsed = events().map((d) => JSON.parse(d));
        expect(parsed.every((e) => e._from === 'agent')).toBe(true);
        expect(
          parsed
            .filter((e) => e.type === 'text')
            .map((e) => e.delta)
            .join(''),
        ).toBe('Raw reply');
        ws.close();
        // The callback went to this app's own statsHook function (a leading-slash URL, resolved against the server).
        const stats = await waitFor(async () => {
          const list = await (await fetch(`${base}/Stat?sortBy=createdAt&pageSize=100`, { headers: gina.headers })).json();
          const mine = list.data.map((s: any) => JSON.parse(s.body)).filter((b: any) => b.identityId === gina.id);
          return mine.length >= 2 && mine;
        }, 10_000);
        // Each callback is its own call of statsHook (concurrent function calls): the rows may be stored in either order.
        expect(stats.map((b: any) => b.event).sort()).toEqual(['turn-completed', 'turn-started']);
        expect(stats.find((b: any) => b.event === 'turn-completed')).toMatchObject({ apiName: 'agentapp', status: 'completed', error: null });
      });
    });

    describe('agent: threads', () => {
      let chat: ChatClient;
      let alice: Identity;

      beforeAll(async () => {
        alice = await userIdentity(app, base, 'alice');
        chat = new ChatClient(base, alice);
        await chat.connect({ apiTools: 'none' });
      });

      afterAll(() => chat?.stop());

      it('thread-list, new-thread, thread-resume with one history batch; the model sees only the current thread', async () => {
        model.script({ text: ['About cats.'] });
        await chat.turn('Tell me about cats');
        // apiTools none: only the uiTools and the built-in update_plan.
        expect(model.requests.at(-1)!.body.tools!.map((t) => t.function.name)).toEqual(['showBook', 'update_plan']);
        await chat.send({ type: 'new-thread' });
        model.script({ text: ['About dogs.'] });
        await chat.turn('Tell me about dogs');
        const dogs = model.requests.at(-1)!.body.messages.map((m) => m.content);
        expect(dogs).not.toContain('Tell me about cats');

        let from = chat.events.length;
        await chat.send({ type: 'thread-list' });
        const list = (await chat.next('thread-list', from)).threads;
        expect(list.map((t: any) => t.preview)).toEqual(['Tell me about dogs', 'Tell me about cats']);
        expect(list[0].createdAt).toBeGreaterThan(1_700_000_000);

        from = chat.events.length;
        await chat.send({ type: 'thread-resume', threadId: list[1].id });
        model.script({ text: ['More cats.'] });
        await chat.send({ type: 'message', text: 'And more?' });
        await chat.next('turn-completed', from);
        const after = chat.events.slice(from);
        expect(after.filter((e) => e.type === 'history')).toHaveLength(1);
        expect(after.findIndex((e) => e.type === 'history')).toBeLessThan(after.findIndex((e) => e.type === 'turn-started'));
        expect(after.find((e) => e.type === 'history').items).toEqual([
          { type: 'user-message', text: 'Tell me about cats' },
          { type: 'text', delta: 'About cats.' },
        ]);
        const resumed = model.requests.at(-1)!.body.messages.map((m) => m.content);
        expect(resumed).toContain('Tell me about cats');
        expect(resumed).not.toContain('Tell me about dogs');
      });

      it('rollback removes the last turn: its user message never reaches the model again', async () => {
        await chat.turn('A mistake');
        const from = chat.events.length;
        await chat.send({ type: 'rollback' });
        await chat.next('info', from);
        await chat.turn('After rollback');
        const contents = model.requests.at(-1)!.body.messages.map((m) => m.content);
        expect(contents).not.toContain('A mistake');
        expect(contents).toContain('Tell me about cats');
      });

      it('compact makes one model call whose summary replaces the older messages', async () => {
        model.script({ text: ['SUMMARY: cats were discussed.'] });
        const from = chat.events.length;
        const before = model.requests.length;
        await chat.send({ type: 'compact' });
        await chat.next('compacted', from);
        expect(model.requests.length).toBe(before + 1);
        await chat.turn('Next question');
        const contents = model.requests.at(-1)!.body.messages.map((m) => String(m.content));
        expect(contents.some((c) => c.includes('SUMMARY: cats were discussed.'))).toBe(true);
        expect(contents).not.toContain('Tell me about cats');
      });

      it('threads survive a server restart', async () => {
        chat.stop();
        await server.close();
        await start();
        chat = new ChatClient(base, alice);
        await chat.connect({ apiTools: 'none' });
        const from = chat.events.length;
        await chat.send({ type: 'thread-list' });
        const list = (await chat.next('thread-list', from)).threads;
        expect(list.map((t: any) => t.preview)).toEqual(['Tell me about dogs', 'Tell me about cats']);
        // The current thread is still the resumed one.
        await chat.turn('Still there?');
        expect(
          model.requests
            .at(-1)!
            .body.messages.map((m) => String(m.content))
            .some((c) => c.includes('SUMMARY: cats')),
        ).toBe(true);
      });
    });

    describe('agent: dynamic tools, actAs, restart', () => {
      it('apiTools dynamic offers three meta-tools that list, describe and invoke the API as the user', async () => {
        const hank = await userIdentity(app, base, `hank-${backend}`, ['writer']);
        const chat = new ChatClient(base, hank);
        await chat.connect({ apiTools: 'dynamic' });
        model.script(
          { toolCalls: [{ name: 'list-api-endpoints', args: { search: 'book' } }] },
          { toolCalls: [{ name: 'get-api-endpoint-schema', args: { name: 'createBook' } }] },
          { toolCalls: [{ name: 'invoke-api-endpoint', args: { name: 'createBook', arguments: { body: { title: 'Dynamic' } } } }] },
          { text: ['Done.'] },
        );
        const events = await chat.turn('Add a book the dynamic way');
        const request = model.requests.at(-1)!.body;
        expect(request.tools!.map((t) => t.function.name)).toEqual([
          'list-api-endpoints',
          'get-api-endpoint-schema',
          'invoke-api-endpoint',
          'showBook',
          'update_plan',
        ]);
        const results = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
        expect(JSON.parse(results[0]).map((e: any) => e.name)).toEqual(expect.arrayContaining(['listBook', 'createBook', 'getBook']));
        expect(JSON.parse(results[1]).properties.body).toBeDefined();
        expect(JSON.parse(results[2]).data).toHaveLength(1);
        expect(events.filter((e) => e.type === 'tool-start').map((e) => e.name)).toEqual([
          'list-api-endpoints',
          'get-api-endpoint-schema',
          'invoke-api-endpoint',
        ]);
        const rows = await (await fetch(`${base}/Book?filter=${encodeURIComponent('title eq "Dynamic"')}`, { headers: hank.headers })).json();
        expect(rows.data[0].createdBy).toBe(hank.id);
        chat.stop();
      });

      it('a session of an identity that is no user runs its tools as anonymous, or as actAs when given', async () => {
        const visitor = `visitor-${backend}-${randomUUID()}`;
        model.script({ toolCalls: [{ name: 'listBook', args: {} }] }, { text: ['No access.'] });
        await agentOp(writer, 'prompt', { identityId: visitor, message: 'List books' });
        expect(
          String(
            model.requests
              .at(-1)!
              .body.messages.filter((m) => m.role === 'tool')
              .at(-1)!.content,
          ),
        ).toMatch(/^401 /);

        const delegated = `visitor-${backend}-${randomUUID()}`;
        await agentOp(writer, 'wake', { identityId: delegated, actAs: writer.id });
        model.script({ toolCalls: [{ name: 'createBook', args: { body: { title: `Delegated ${backend}` } } }] }, { text: ['Added.'] });
        await agentOp(writer, 'prompt', { identityId: delegated, message: 'Add one' });
        const rows = await (await fetch(`${base}/Book?filter=${encodeURIComponent(`title eq "Delegated ${backend}"`)}`, { headers: writer.headers })).json();
        expect(rows.data).toHaveLength(1);
        expect(rows.data[0].createdBy).toBe(writer.id);
        expect(String(model.requests.at(-1)!.body.messages[0].content)).toContain(`id ${writer.id}`);
      });

      it('restart restarts the worker (agent-event restarted) and the session goes on', async () => {
        const ivy = await userIdentity(app, base, `ivy-${backend}`);
        const chat = new ChatClient(base, ivy);
        await chat.connect({ apiTools: 'none' });
        const from = chat.events.length;
        await chat.send({ type: 'restart' });
        expect((await chat.next('agent-event', from)).event.name).toBe('restarted');
        model.script({ text: ['After restart.'] });
        const long = `Still here? ${'x'.repeat(300)}`;
        expect(textOf(await chat.turn(long))).toBe('After restart.');
        const at = chat.events.length;
        await chat.send({ type: 'thread-list' });
        expect((await chat.next('thread-list', at)).threads.map((t: any) => t.preview)).toEqual([long.slice(0, 200)]);
        chat.stop();
      });
    });

    describe('agent: worker crash', () => {
      it("a crash of one session's worker fails only its turn; other sessions go on and the next turn works", async () => {
        const carol = await userIdentity(app, base, `carol-${backend}`);
        const dave = await userIdentity(app, base, `dave-${backend}`);
        const a = new ChatClient(base, carol);
        const b = new ChatClient(base, dave);
        await a.connect({ apiTools: 'none' });
        await b.connect({ apiTools: 'none' });
        model.script({ text: ['Working'], hang: true });
        const from = a.events.length;
        await a.send({ type: 'message', text: 'Crash me' });
        await a.next('text', from);
        // What a crash looks like from outside: the pool's worker thread running the turn ends.
        const agent = server.agent as any;
        await agent.pool.workerOf(agent.sessions.get(carol.id).turn.id).terminate();
        expect(await a.next('turn-completed', from)).toMatchObject({ status: 'failed', error: expect.stringContaining('worker') });
        model.script({ text: ['Fine here.'] });
        expect(textOf(await b.turn('Are you alive?'))).toBe('Fine here.');
        model.script({ text: ['Back again.'] });
        expect(textOf(await a.turn('And you?'))).toBe('Back again.');
        a.stop();
        b.stop();
      });
    });

    describe('agent: ctx.agent from functions', () => {
      it('prompt runs a turn without a client, list shows the session, close stops it, a second close answers false', async () => {
        const bob = await userIdentity(app, base, 'bob');
        model.script({ text: ['Backend ', 'answer'] });
        const prompted = await agentOp(bob, 'prompt', { identityId: bob.id, message: 'From the backend' });
        expect(prompted.result).toEqual({ status: 'completed', text: 'Backend answer' });
        const listed = (await agentOp(bob, 'list')).result;
        expect(listed).toEqual(expect.arrayContaining([expect.objectContaining({ identityId: bob.id, channel: `agentapp:agent:${bob.id}`, agent: 'idle' })]));
        expect(await agentOp(bob, 'close', { identityId: bob.id })).toEqual({ result: { closed: true } });
        expect(await agentOp(bob, 'close', { identityId: bob.id })).toEqual({ result: { closed: false } });
        expect(await agentOp(bob, 'wake', { identityId: bob.id })).toEqual({ result: { agent: 'idle' } });
      });

      it('ask is one completion without tools: text, usage, credits and the rung', async () => {
        model.script({ text: ['Forty-two'], usage: { prompt: 40, completion: 3 } });
        const asked = await agentOp(writer, 'ask', { messages: [{ role: 'user', content: 'The answer?' }], model: 'smart' });
        expect(asked.result).toEqual({
          text: 'Forty-two',
          usage: { inputTokens: 40, outputTokens: 3, cachedInputTokens: 0 },
          credits: expect.any(Number),
          model: 'pro',
        });
        expect(model.requests.at(-1)!.body.model).toBe('mid-1');
        expect(model.requests.at(-1)!.body.stream).toBeFalsy();
        expect(model.requests.at(-1)!.body.tools).toBeUndefined();
        const before = model.requests.length;
        const unconfigured = await agentOp(writer, 'ask', { messages: [{ role: 'user', content: 'x' }], model: 'genius' });
        expect(unconfigured).toMatchObject({ refused: 503, body: { error: expect.stringContaining('"max"') } });
        expect(model.requests.length).toBe(before);
      });

      it('a valid but unconfigured rung fails the turn naming it, with no model request', async () => {
        const before = model.requests.length;
        const prompted = await agentOp(writer, 'prompt', { identityId: writer.id, message: 'On max', model: 'max' });
        expect(prompted.result).toMatchObject({ status: 'failed', error: expect.stringContaining('"max"') });
        expect(model.requests.length).toBe(before);
        // Removed names and misspellings run on their rung (norway-smart leaves the region for base).
        await agentOp(writer, 'prompt', { identityId: writer.id, message: 'Smartly', model: 'norway-smart' });
        expect(model.requests.at(-1)!.body.model).toBe('small-1');
        await agentOp(writer, 'prompt', { identityId: writer.id, message: 'In Norway', model: 'norway-base' });
        expect(model.requests.at(-1)!.body.model).toBe('no-small');
      });

      it('refuses bad options with 400 naming the option', async () => {
        expect(await agentOp(writer, 'connect', { identityId: writer.id })).toMatchObject({
          refused: 400,
          body: { error: expect.stringContaining('connectionId') },
        });
        expect(await agentOp(writer, 'prompt', { identityId: writer.id })).toMatchObject({ refused: 400, body: { error: expect.stringContaining('message') } });
        expect(await agentOp(writer, 'setCredits', { identityId: writer.id, sessionCredits: -1 })).toMatchObject({ refused: 400 });
        expect(await agentOp(writer, 'connect', { identityId: writer.id, connectionId: 'nope.x' })).toMatchObject({ refused: 404 });
        // The connect function itself: no connectionId → 400, anonymous → 401 (SPEC §4.11).
        expect((await post(writer, 'agentConnect', {})).status).toBe(400);
        const anonymous = await fetch(`${base}/agentConnect`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"connectionId":"x"}',
        });
        expect(anonymous.status).toBe(401);
      });
    });

    describe('agent: idle timeout', () => {
      it('an idle session sends idle-timeout, then stops; a later connect starts a fresh session that reads its options again', async () => {
        await server.close();
        const file = join(app.dir, 'svc.json');
        const settings = JSON.parse(readFileSync(file, 'utf8'));
        settings.agent.idleTimeoutSeconds = 2;
        writeFileSync(file, JSON.stringify(settings));
        expect((await runCli(['generate', app.dir], app.env)).code).toBe(0);
        await start();
        const erin = await userIdentity(app, base, `erin-${backend}`);
        const chat = new ChatClient(base, erin);
        await chat.connect();
        const warning = await chat.next('idle-timeout', 0, 5000);
        expect(warning).toMatchObject({ timeoutMs: 2000 });
        expect(warning.deadline).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
        expect((await chat.next('agent-event', chat.events.indexOf(warning), 5000)).event.name).toBe('idle-stopped');
        expect(await chat.next('status', chat.events.indexOf(warning))).toMatchObject({ agent: 'stopped' });
        const from = chat.events.length;
        await post(erin, 'agentConnect', { connectionId: chat.connectionId, apiTools: 'none' });
        expect((await chat.next('agent-event', from)).event.name).toBe('started');
        model.script({ text: ['Fresh.'] });
        await chat.turn('Hello again');
        expect(model.requests.at(-1)!.body.tools!.map((t) => t.function.name)).toEqual(['showBook', 'update_plan']);
        chat.stop();
      });
    });
  });
}
