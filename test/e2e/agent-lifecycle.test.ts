/**
 * One client must not take an agent session's resources or the server down (issue 20 item 2): a
 * spawned `svc serve` of the agent fixture with a stdio MCP server, a real `@azure/web-pubsub-client`
 * and the scripted model. A burst of 500 `restart` frames sent at once leaves the server its pool of
 * agent worker threads (no thread more) and the session one stdio MCP process (counted in /proc for the server process), its next turn completes,
 * the thread count and RSS come back to where they were, and SIGTERM still drains and exits.
 * The database plays no part here, so this runs on SQLite only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient } from '../support/chat-client.js';

const BURST = 500;

let source: string;
let app: PreparedApp;
let model: ModelServer;
let server: TestServer;
let ada: Identity;
let chat: ChatClient;

/** A line of /proc/<pid>/status as a number (`Threads`, `VmRSS` in kB). */
function procStatus(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`))!;
  return Number.parseInt(line.slice(field.length + 1).trim(), 10);
}

/** The stdio MCP server processes (`node mcp/notes.mjs`) the server process started and that still run. */
function mcpChildren(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== pid || fields[0] === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('mcp/notes.mjs')) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

beforeAll(async () => {
  model = await startModelServer();
  source = mkdtempSync(join(tmpdir(), 'svc-lifecycle-src-'));
  cpSync(join(ROOT, 'test/fixtures/apps/agent'), source, { recursive: true });
  const svc = JSON.parse(readFileSync(join(source, 'svc.json'), 'utf8'));
  svc.agent.mcpServers = { notes: { command: 'node', args: ['mcp/notes.mjs'] } };
  writeFileSync(join(source, 'svc.json'), JSON.stringify(svc, null, 2));
  mkdirSync(join(source, 'mcp'));
  cpSync(join(ROOT, 'test/support/mcp-stdio-server.mjs'), join(source, 'mcp/notes.mjs'));
  app = await prepareApp(source, 'sqlite');
  symlinkSync(join(ROOT, 'node_modules'), join(app.dir, 'node_modules'), 'dir');
  server = await serve(app.dir, { ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k', SVC_LOG_LEVEL: 'warn' });
  ada = await userIdentity(app, server.url, 'ada');
}, 120_000);

afterAll(async () => {
  chat?.stop();
  // A server that does not exit on SIGTERM (the failure this file looks for) is killed.
  if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  await model?.close();
  await app?.cleanup();
  rmSync(source, { recursive: true, force: true });
});

describe('agent session lifecycle under a burst of restarts', () => {
  it(`${BURST} restart frames at once: no extra thread, one stdio MCP process, the next turn completes, threads and RSS come back, SIGTERM exits`, async () => {
    const pid = server.child.pid!;
    chat = new ChatClient(server.url, ada);
    await chat.connect({ apiTools: 'none' });
    const connected = (from: number) =>
      waitFor(() => chat.events.slice(from).some((e) => e.type === 'mcp-status' && e.name === 'notes' && e.status === 'connected'), 15_000);
    await connected(0);
    // Warm up: a turn and a restart, so the thread pools and heaps the server keeps are in place.
    expect((await chat.turn('Warm up')).find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
    let from = chat.events.length;
    await chat.send({ type: 'restart' });
    await chat.next('agent-event', from);
    await connected(from);
    expect((await chat.turn('Warm again')).find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
    await waitFor(() => mcpChildren(pid).length === 1, 10_000);
    const threads = procStatus(pid, 'Threads');
    const rss = procStatus(pid, 'VmRSS');

    from = chat.events.length;
    await Promise.all(Array.from({ length: BURST }, () => chat.send({ type: 'restart' })));
    model.script({ text: ['Still ', 'here'] });
    const turn = await chat.turn('After the burst');
    expect(turn.find((e) => e.type === 'turn-started')).toBeDefined();
    const completed = turn.find((e) => e.type === 'turn-completed');
    expect(completed, JSON.stringify(completed)).toMatchObject({ status: 'completed' }); // a failed turn shows its error
    const restarted = chat.events.slice(from).filter((e) => e.type === 'agent-event' && e.event.name === 'restarted').length;
    expect(restarted).toBeGreaterThanOrEqual(1);
    expect(restarted).toBeLessThanOrEqual(BURST);

    // No thread more than before the burst (the pool's workers are shared) and one stdio process.
    await waitFor(() => procStatus(pid, 'Threads') <= threads, 15_000).catch(() => {});
    expect(procStatus(pid, 'Threads')).toBe(threads);
    await waitFor(() => mcpChildren(pid).length === 1, 15_000).catch(() => {});
    expect(mcpChildren(pid)).toHaveLength(1);
    // Memory: within 64 MB of the baseline (terminated workers' heaps are given back).
    await waitFor(() => procStatus(pid, 'VmRSS') <= rss + 64 * 1024, 15_000).catch(() => {});
    expect(procStatus(pid, 'VmRSS')).toBeLessThanOrEqual(rss + 64 * 1024);

    // SIGTERM drains and exits within 10 s.
    const started = Date.now();
    const code = await Promise.race([server.close(), new Promise<'hung'>((ok) => setTimeout(() => ok('hung'), 10_000).unref())]);
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 180_000);
});
