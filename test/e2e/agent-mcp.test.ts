/**
 * The agent's MCP servers end to end (issue 14; DESIGN §7 `agent.mcpServers`; SPEC §6.3 `mcp-list`,
 * `mcp-status`, `mcp-tool-start`/`mcp-tool-end`; SPEC §7 agent rule 4): the agent fixture app with
 * four servers — a real Streamable HTTP server on loopback built with the SDK (bearer token from a
 * secret; a tool that works, one that fails, one that hangs past `timeoutMs`), a stdio server the
 * session starts in the app folder, one nobody listens on, and one whose URL is not set — driven
 * by the scripted model over a real `@azure/web-pubsub-client`. The database plays no part in MCP,
 * so this runs on SQLite only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { ChatClient, textOf } from '../support/chat-client.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const TOKEN = 'mcp-token-1';
const TIMEOUT_MS = 800;

let source: string;
let app: PreparedApp;
let model: ModelServer;
let mcp: McpTestServer;
let server: RunningServer;
let hooks: Server;
let hookUrl = '';
const callbacks: any[] = [];
let ada: Identity;
let chat: ChatClient;

/** The agent fixture with `agent.mcpServers` added and the stdio server at `mcp/notes.mjs`. */
function fixtureWithMcp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-src-'));
  cpSync(join(ROOT, 'test/fixtures/apps/agent'), dir, { recursive: true });
  const svc = JSON.parse(readFileSync(join(dir, 'svc.json'), 'utf8'));
  svc.agent.mcpServers = {
    catalogue: { url: '${env.MCP_URL}', headers: { authorization: 'Bearer ${secrets.MCP_TOKEN}' }, timeoutMs: TIMEOUT_MS },
    notes: { command: 'node', args: ['mcp/notes.mjs'], env: { NOTES_GREETING: '${env.GREETING}' } },
    down: { url: 'http://127.0.0.1:1/mcp' },
    unset: { url: '${env.MCP_UNSET_URL}' },
  };
  writeFileSync(join(dir, 'svc.json'), JSON.stringify(svc, null, 2));
  mkdirSync(join(dir, 'mcp'));
  cpSync(join(ROOT, 'test/support/mcp-stdio-server.mjs'), join(dir, 'mcp/notes.mjs'));
  return dir;
}

const only = (events: any[], type: string) => events.filter((e) => e.type === type);
/** The `mcp-status` values of server `name` since event index `from`, in order. */
const statusesOf = (name: string, from: number): string[] =>
  chat.events
    .slice(from)
    .filter((e) => e.type === 'mcp-status' && e.name === name)
    .map((e) => e.status);
/** The content of the last tool result the model was sent, as JSON text. */
const lastToolResult = (): string =>
  JSON.stringify(
    model.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .at(-1)?.content,
  );

describe('agent MCP servers', () => {
  beforeAll(async () => {
    model = await startModelServer();
    mcp = await startMcpServer(TOKEN);
    hooks = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        callbacks.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((ok) => hooks.listen(0, '127.0.0.1', ok));
    hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/stats`;
    source = fixtureWithMcp();
    app = await prepareApp(source, 'sqlite');
    // The stdio server imports the SDK, as an app's own MCP server would from the app's node_modules.
    symlinkSync(join(ROOT, 'node_modules'), join(app.dir, 'node_modules'), 'dir');
    server = await startServer({
      appDir: app.dir,
      port: 0,
      env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k', MCP_URL: mcp.url, SVC_SECRET_MCP_TOKEN: TOKEN, GREETING: 'Hello' },
      logger: pino({ level: 'silent' }),
      mcpPingMs: 300,
    });
    ada = await userIdentity(app, server.url, 'ada');
  });

  afterAll(async () => {
    chat?.stop();
    await server?.close();
    await Promise.all([model?.close(), mcp?.stop()]);
    hooks?.close();
    await app?.cleanup();
    rmSync(source, { recursive: true, force: true });
  });

  it('connects every server per session: mcp-status as each settles, mcp-list with all four', async () => {
    chat = new ChatClient(server.url, ada);
    await chat.connect({ callbackUrl: hookUrl });
    const status = (name: string) => chat.events.find((e) => e.type === 'mcp-status' && e.name === name)?.status;
    await waitFor(() => status('catalogue') && status('notes') && status('down') && status('unset'), 15_000);
    expect({ catalogue: status('catalogue'), notes: status('notes'), down: status('down'), unset: status('unset') }).toEqual({
      catalogue: 'connected',
      notes: 'connected',
      down: 'failed',
      unset: 'failed',
    });
    const from = chat.events.length;
    await chat.send({ type: 'mcp-list' });
    const list = await chat.next('mcp-list', from);
    expect(list.servers).toEqual([
      { name: 'catalogue', status: 'connected' },
      { name: 'notes', status: 'connected' },
      { name: 'down', status: 'failed' },
      { name: 'unset', status: 'failed' },
    ]);
    expect(mcp.refused).toBe(0);
  });

  it('offers the connected servers’ tools beside the API tools; a down server blocks nothing', async () => {
    model.script({ text: ['Tools noted.'] });
    const events = await chat.turn('Which tools do you have?');
    expect(only(events, 'turn-completed')).toEqual([expect.objectContaining({ status: 'completed' })]);
    const offered = model.requests.at(-1)!.body.tools!.map((t) => t.function.name);
    expect(offered).toEqual(
      expect.arrayContaining(['listBook', 'catalogue__lookup', 'catalogue__explode', 'catalogue__stall', 'notes__greet', 'notes__crash']),
    );
    expect(offered.filter((n) => n.startsWith('down__') || n.startsWith('unset__'))).toEqual([]);
    const lookup = model.requests.at(-1)!.body.tools!.find((t) => t.function.name === 'catalogue__lookup')!;
    expect(lookup.function.description).toBe('[catalogue] Looks a book up by ISBN');
    expect(lookup.function.parameters).toMatchObject({ properties: { isbn: { type: 'string' } }, required: ['isbn'] });
  });

  it('a working call is wrapped in mcp-tool-start/end and its result reaches the model', async () => {
    model.script({ toolCalls: [{ name: 'catalogue__lookup', args: { isbn: '9780441013593' } }] }, { text: ['Found it.'] });
    const events = await chat.turn('Look up Dune');
    const [start] = only(events, 'mcp-tool-start');
    expect(start).toMatchObject({ server: 'catalogue', tool: 'lookup', argsPreview: '{"isbn":"9780441013593"}' });
    const [end] = only(events, 'mcp-tool-end');
    expect(end.id).toBe(start.id);
    expect(end.durationMs).toEqual(expect.any(Number));
    expect(end).not.toHaveProperty('error');
    expect(mcp.calls.at(-1)).toEqual({ tool: 'lookup', args: { isbn: '9780441013593' } });
    const toolMessage = model.requests.at(-1)!.body.messages.find((m) => m.role === 'tool');
    expect(JSON.stringify(toolMessage?.content)).toContain('ISBN 9780441013593: Dune by Frank Herbert');
    expect(textOf(events)).toBe('Found it.');
  });

  it('a failing tool and one hanging past timeoutMs end with error in mcp-tool-end and in the callback’s toolCalls; the turn goes on', async () => {
    model.script(
      { toolCalls: [{ name: 'catalogue__explode', args: {} }] },
      { toolCalls: [{ name: 'catalogue__stall', args: {} }] },
      { text: ['Both failed.'] },
    );
    const events = await chat.turn('Try the broken tools');
    const ends = only(events, 'mcp-tool-end');
    expect(ends).toHaveLength(2);
    expect(ends[0].error).toBe('the shelf collapsed');
    expect(ends[1].error).toBe(`catalogue.stall did not answer within ${TIMEOUT_MS} ms`);
    expect(ends[1].durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(only(events, 'turn-completed')).toEqual([expect.objectContaining({ status: 'completed' })]);
    expect(textOf(events)).toBe('Both failed.');
    // The model read both failures as tool results.
    const toolMessages = model.requests.at(-1)!.body.messages.filter((m) => m.role === 'tool');
    expect(JSON.stringify(toolMessages)).toContain('error: the shelf collapsed');
    const completed = await waitFor(() => callbacks.find((c) => c.event === 'turn-completed' && c.toolCalls.some((t: any) => t.tool === 'explode')));
    expect(completed.toolCalls).toEqual([
      { server: 'catalogue', tool: 'explode', durationMs: expect.any(Number), error: 'the shelf collapsed' },
      { server: 'catalogue', tool: 'stall', durationMs: expect.any(Number), error: `catalogue.stall did not answer within ${TIMEOUT_MS} ms` },
    ]);
  });

  it('the stdio server runs in the app folder with its env; when its process dies the session reconnects it', async () => {
    model.script({ toolCalls: [{ name: 'notes__greet', args: { name: 'Ada' } }] }, { text: ['Greeted.'] });
    await chat.turn('Greet me');
    const greeting = lastToolResult();
    expect(greeting).toContain(`Hello, Ada; folder ${basename(app.dir)}; pid `);
    const firstPid = /pid (\d+)/.exec(greeting)![1];

    const from = chat.events.length;
    model.script({ toolCalls: [{ name: 'notes__crash', args: {} }] }, { text: ['It crashed.'] });
    const events = await chat.turn('Crash the notes server');
    expect(only(events, 'mcp-tool-end')[0].error).toEqual(expect.any(String));
    expect(only(events, 'turn-completed')).toEqual([expect.objectContaining({ status: 'completed' })]);
    await waitFor(() => statusesOf('notes', from).includes('connected'), 15_000);
    expect(statusesOf('notes', from)).toEqual(['reconnecting', 'connected']);

    model.script({ toolCalls: [{ name: 'notes__greet', args: { name: 'Ada' } }] }, { text: ['Greeted again.'] });
    await chat.turn('Greet me again');
    const again = lastToolResult();
    const secondPid = /pid (\d+)/.exec(again)![1];
    expect(secondPid).not.toBe(firstPid);
  });

  it('an HTTP server that goes away is found by the ping (reconnecting, then failed); turns run without its tools; it is connected again when back', async () => {
    const from = chat.events.length;
    const statuses = () => statusesOf('catalogue', from);
    await mcp.stop();
    await waitFor(() => statuses().includes('failed'), 10_000);

    model.script({ text: ['Still here.'] });
    expect(textOf(await chat.turn('Anyone there?'))).toBe('Still here.');
    const offered = model.requests.at(-1)!.body.tools!.map((t) => t.function.name);
    expect(offered.some((n) => n.startsWith('catalogue__'))).toBe(false);
    expect(offered).toContain('notes__greet');

    await mcp.start();
    await waitFor(() => statuses().at(-1) === 'connected', 20_000);
    expect(statuses()).toEqual(['reconnecting', 'failed', 'connected']);
    model.script({ toolCalls: [{ name: 'catalogue__lookup', args: { isbn: '2' } }] }, { text: ['Back.'] });
    const back = await chat.turn('Look up 2');
    expect(only(back, 'mcp-tool-end')[0]).not.toHaveProperty('error');
    expect(mcp.calls.at(-1)).toEqual({ tool: 'lookup', args: { isbn: '2' } });
  });

  it('thread-resume replays MCP calls in the history', async () => {
    const list = chat.events.length;
    await chat.send({ type: 'thread-list' });
    const threads = (await chat.next('thread-list', list)).threads;
    const from = chat.events.length;
    await chat.send({ type: 'thread-resume', threadId: threads[0].id });
    const history = await chat.next('history', from);
    const starts = history.items.filter((i: any) => i.type === 'mcp-tool-start').map((i: any) => `${i.server}.${i.tool}`);
    expect(starts).toEqual(expect.arrayContaining(['catalogue.lookup', 'catalogue.explode', 'catalogue.stall', 'notes.greet', 'notes.crash']));
    expect(history.items.filter((i: any) => i.type === 'mcp-tool-end' && i.error)).not.toHaveLength(0);
  });

  it('closing the session stops its stdio server', async () => {
    model.script({ toolCalls: [{ name: 'notes__greet', args: { name: 'Ada' } }] }, { text: ['Hi.'] });
    await chat.turn('Greet me once more');
    const pid = Number(/pid (\d+)/.exec(lastToolResult())![1]);
    expect(isRunning(pid)).toBe(true);
    await server.agent.stopSession(ada.id, 'stopped');
    await waitFor(() => !isRunning(pid), 10_000);
  });
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
