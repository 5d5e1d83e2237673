/**
 * Approval of agent tool calls end to end (issue 34 §1; docs/agent.md "Approvals"): the agent fixture
 * app with `agent.approval` `ask-writes` (a glob `create*` set to `auto`) and `approvalTimeoutSeconds`
 * 1, served over real HTTP on SQLite and PostgreSQL, a real `@azure/web-pubsub-client` and the scripted
 * model on loopback. The model asks to delete a book: the `approval-request` frame arrives and nothing
 * is deleted until the user approves; a denial (with a note) and a timeout reach the model as
 * "the user declined"; forged answers (another identity's connection, an unknown reqId, a replay, a
 * second approval) change nothing and are logged; the glob lets `createBook` run without asking; the
 * outcomes are in the thread's history and the admin transcript; fuzzed `approval` bodies are
 * ignored; the AG-UI adapter turns the request into a valid CUSTOM event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { pino } from 'pino';
import { EventSchemas } from '@ag-ui/core/schemas';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { backends } from '../support/backends.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { approvalFrame } from '../support/fuzz-cases.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient, postJson } from '../support/chat-client.js';
import { agUiAdapter, startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');

/** The fixture with writers allowed to delete books and the approval settings under test. */
function withApprovals(dir: string): void {
  const file = join(dir, 'svc.json');
  const svc = JSON.parse(readFileSync(file, 'utf8'));
  svc.agent.approval = { default: 'ask-writes', tools: { 'create*': 'auto' } };
  svc.agent.approvalTimeoutSeconds = 1;
  writeFileSync(file, JSON.stringify(svc, null, 2));
  const book = join(dir, 'collections/Book.json');
  const collection = JSON.parse(readFileSync(book, 'utf8'));
  collection.access.push({ method: 'DELETE', roleNames: ['writer'] });
  writeFileSync(book, JSON.stringify(collection, null, 2));
}

for (const backend of backends()) {
  describe(`agent approvals on ${backend}`, () => {
    let app: PreparedApp;
    let model: ModelServer;
    let server: RunningServer;
    let base: string;
    let writer: Identity;
    let reader: Identity;
    let chat: ChatClient;
    const warnings: string[] = [];

    const bookExists = async (id: string) => (await fetch(`${base}/Book/${id}`, { headers: writer.headers })).status === 200;
    async function newBook(title: string): Promise<string> {
      const r = await postJson(base, writer, 'Book', { title });
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      return r.json.data[0];
    }
    /** The content of the last tool result the model was sent. */
    const lastToolResult = () =>
      String(
        model.requests
          .at(-1)!
          .body.messages.filter((m) => m.role === 'tool')
          .at(-1)?.content,
      );
    /** Sends a message whose model step deletes `id`; resolves with the approval request. */
    async function askToDelete(id: string): Promise<{ from: number; request: any }> {
      model.script({ toolCalls: [{ name: 'deleteBook', args: { id } }] }, { text: ['Done.'] });
      const from = chat.events.length;
      await chat.send({ type: 'message', text: `Delete ${id}` });
      return { from, request: await chat.next('approval-request', from) };
    }

    beforeAll(async () => {
      model = await startModelServer();
      app = await prepareApp(FIXTURE, backend, withApprovals);
      const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
      server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' }, logger });
      base = server.url;
      writer = await userIdentity(app, base, 'writer', ['writer']);
      reader = await userIdentity(app, base, 'reader');
      chat = new ChatClient(base, writer);
      await chat.connect();
    }, 120_000);

    afterAll(async () => {
      chat?.stop();
      await server?.close();
      await model?.close();
      await app?.cleanup();
    });

    it('ask-writes: a DELETE waits for approval, and runs once approved; the glob lets createBook run without asking', async () => {
      const id = await newBook('Doomed');
      const { from, request } = await askToDelete(id);
      expect(request).toMatchObject({ type: 'approval-request', tool: 'deleteBook', params: { id }, summary: `Delete book #${id}`, _from: 'agent' });
      // Answered at once (the timeout is 1 s); the checks of the waiting state come first.
      expect(chat.events.slice(from).some((e) => e.type === 'tool-start')).toBe(false);
      expect(await bookExists(id)).toBe(true);
      await chat.send({ type: 'approval', reqId: request.reqId, approved: true });
      await chat.next('turn-completed', from, 20_000);
      const events = chat.events.slice(from);
      expect(events.find((e) => e.type === 'approval-resolved')).toMatchObject({ reqId: request.reqId, approved: true });
      expect(events.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
      expect(events.filter((e) => e.type === 'tool-start').map((e) => e.name)).toEqual(['deleteBook']);
      expect(await bookExists(id)).toBe(false);
      // The AG-UI adapter carries the request as a CUSTOM event holding an AG-UI Interrupt.
      expect(typeof request.reqId).toBe('string');
      const custom = agUiAdapter('t')(request).find((e: any) => e.name === 'approval-request') as any;
      expect(() => EventSchemas.parse(custom)).not.toThrow();
      expect(custom.value).toMatchObject({ id: request.reqId, reason: 'tool_approval', message: `Delete book #${id}`, toolCallId: request.reqId });

      // createBook is a POST, but the `create*` glob says auto: it runs without a request.
      model.script({ toolCalls: [{ name: 'createBook', args: { body: { title: 'Glob' } } }] }, { text: ['Added.'] });
      const created = await chat.turn('Add Glob');
      expect(created.some((e) => e.type === 'approval-request')).toBe(false);
      expect(created.filter((e) => e.type === 'tool-start').map((e) => e.name)).toEqual(['createBook']);
    });

    it('a denial with a note reaches the model as "the user declined", and nothing is deleted', async () => {
      const id = await newBook('Kept');
      const { from, request } = await askToDelete(id);
      await chat.send({ type: 'approval', reqId: request.reqId, approved: false, note: 'keep it, it is a gift' });
      await chat.next('turn-completed', from, 20_000);
      expect(chat.events.slice(from).find((e) => e.type === 'approval-resolved')).toMatchObject({
        approved: false,
        reason: 'denied',
        note: 'keep it, it is a gift',
      });
      expect(lastToolResult()).toContain('the user declined');
      expect(lastToolResult()).toContain('keep it, it is a gift');
      expect(await bookExists(id)).toBe(true);
    });

    it('no answer within approvalTimeoutSeconds is a decline', async () => {
      const id = await newBook('Unanswered');
      const { from } = await askToDelete(id);
      await chat.next('turn-completed', from, 20_000);
      expect(chat.events.slice(from).find((e) => e.type === 'approval-resolved')).toMatchObject({ approved: false, reason: 'timeout' });
      expect(lastToolResult()).toContain('the user declined (no answer in time)');
      expect(await bookExists(id)).toBe(true);
    });

    it('forged answers change nothing and are logged: another identity, an unknown reqId, a replay, a second approval', async () => {
      // The reader's connection, joined to the writer's channel by a connect naming the writer.
      const intruder = new ChatClient(base, reader);
      await intruder.connect();
      const joined = await postJson(base, reader, '_invoke/agentAdmin', {
        op: 'connect',
        args: JSON.stringify({ identityId: writer.id, connectionId: intruder.connectionId }),
      });
      expect(joined.status, JSON.stringify(joined.json)).toBe(200);
      const id = await newBook('Guarded');
      warnings.length = 0;
      const { from, request } = await askToDelete(id);
      intruder.channel = chat.channel;
      await intruder.send({ type: 'approval', reqId: request.reqId, approved: true });
      await chat.send({ type: 'approval', reqId: 'no-such-request', approved: true });
      await waitFor(() => warnings.some((w) => w.includes('another identity')) && warnings.some((w) => w.includes('no approval request no-such-request')));
      expect(await bookExists(id)).toBe(true);
      expect(chat.events.slice(from).some((e) => e.type === 'approval-resolved')).toBe(false);
      intruder.stop();

      // The writer approves twice: the second answer is ignored and logged.
      await chat.send({ type: 'approval', reqId: request.reqId, approved: true });
      await chat.send({ type: 'approval', reqId: request.reqId, approved: false });
      await chat.next('turn-completed', from, 20_000);
      await waitFor(() => warnings.some((w) => w.includes(`approval ${request.reqId} was already answered`)));
      expect(chat.events.slice(from).filter((e) => e.type === 'approval-resolved')).toHaveLength(1);
      expect(await bookExists(id)).toBe(false);

      // A replay of the used reqId in a later turn does not approve that turn's request.
      const other = await newBook('Second');
      const next = await askToDelete(other);
      await chat.send({ type: 'approval', reqId: request.reqId, approved: true });
      await chat.next('turn-completed', next.from, 20_000);
      expect(chat.events.slice(next.from).find((e) => e.type === 'approval-resolved')).toMatchObject({ approved: false, reason: 'timeout' });
      expect(await bookExists(other)).toBe(true);
    });

    const seed = fuzzSeed();
    it(`malformed approval frames (fuzzed, seed ${seed}) are ignored without a crash; the outcomes are in the thread history`, async () => {
      for (const frame of [
        {},
        { reqId: 7, approved: true },
        { reqId: 'x' },
        { reqId: 'x', approved: 'yes' },
        { reqId: 'x', approved: false, note: 5 },
        { reqId: null },
      ])
        await chat.send({ type: 'approval', ...frame });
      // Fuzzed bodies, some naming the live request: none may settle it (it times out as declined).
      const r = new Prng(seed);
      const id = await newBook('Fuzzed');
      const pending = await askToDelete(id);
      // The hub may refuse a frame (a lone surrogate is not UTF-8): an error answer, which is allowed too.
      for (let i = 0; i < 40; i++) await chat.send(JSON.parse(approvalFrame(r, 4000, [pending.request.reqId]))).catch(() => undefined);
      await chat.next('turn-completed', pending.from, 20_000);
      expect(chat.events.slice(pending.from).find((e) => e.type === 'approval-resolved')).toMatchObject({ approved: false, reason: 'timeout' });
      expect(await bookExists(id)).toBe(true);
      const from = chat.events.length;
      await chat.send({ type: 'status' });
      expect(await chat.next('status', from)).toMatchObject({ agent: 'idle' });
      await waitFor(() => warnings.some((w) => w.includes('approval.approved must be true or false')));

      await chat.send({ type: 'thread-list' });
      const list = await chat.next('thread-list', from);
      await chat.send({ type: 'thread-resume', threadId: list.threads[0].id });
      const history = await chat.next('history', from);
      const approvals = history.items.filter((i: any) => i.type === 'approval');
      expect(approvals.map((a: any) => [a.tool, a.approved, a.reason ?? null])).toEqual([
        ['deleteBook', true, null],
        ['deleteBook', false, 'denied'],
        ['deleteBook', false, 'timeout'],
        ['deleteBook', true, null],
        ['deleteBook', false, 'timeout'],
        ['deleteBook', false, 'timeout'],
      ]);
      expect(approvals[1]).toMatchObject({ note: 'keep it, it is a gift' });
      // The console's thread view reads the same transcript from the admin API.
      const admin = await adminIdentity(app, base);
      const transcript = await (await fetch(`${base}/_admin/agent/threads/${list.threads[0].id}`, { headers: admin.headers })).json();
      const items = transcript.turns.flatMap((t: any) => t.items).filter((i: any) => i.type === 'approval');
      expect(items.map((i: any) => i.approved)).toEqual([true, false, false, true, false, false]);
      expect(items[0].summary).toMatch(/^Delete book #/);
    });
  });
}
