/**
 * The agent's stats callback URL in the log (issue 20 §5): the URL carries its shared secret in the
 * query string, so every log line about the callback (a refusing hook, an unreachable one, a URL that
 * does not parse) names it without its query string. The fixture app test/fixtures/apps/agent runs
 * in-process on SQLite with its log captured; a real `@azure/web-pubsub-client` drives one turn per
 * callback URL against the scripted model server. Also: a model provider that cannot be reached is
 * named (address and network error) in the server log only; the user is told it could not be reached.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient } from '../support/chat-client.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SECRET = 'cb-shared-secret-4711';
const lines: Record<string, unknown>[] = [];
let app: PreparedApp;
let model: ModelServer;
let server: RunningServer;
let hooks: Server;
let hookBase = '';
let closedBase = '';
const chats: ChatClient[] = [];

beforeAll(async () => {
  model = await startModelServer();
  hooks = createServer((req, res) => void req.resume().on('end', () => res.writeHead(500).end()));
  await new Promise<void>((ok) => hooks.listen(0, '127.0.0.1', ok));
  hookBase = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}`;
  const closed = createServer();
  await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
  closedBase = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise((ok) => closed.close(ok));
  app = await prepareApp(join(ROOT, 'test/fixtures/apps/agent'), 'sqlite');
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  server = await startServer({
    appDir: app.dir,
    port: 0,
    env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'test-key-1' },
    logger: pino({ level: 'info' }, sink),
  });
}, 120_000);

afterAll(async () => {
  for (const chat of chats) chat.stop();
  await server?.close();
  await model?.close();
  hooks?.close();
  await app?.cleanup();
});

it('logs a refusing, an unreachable and an unparsable stats callback URL without its query string', async () => {
  const cases = [
    { who: 'hooked', url: `${hookBase}/stats?key=${SECRET}`, message: 'agent stats callback answered an error' },
    { who: 'gone', url: `${closedBase}/stats?key=${SECRET}#frag`, message: 'agent stats callback failed' },
    { who: 'broken', url: `http://bad host/stats?key=${SECRET}`, message: 'agent stats callback URL is not valid' },
  ];
  for (const c of cases) {
    const chat = new ChatClient(server.url, await userIdentity(app, server.url, c.who, ['writer']));
    chats.push(chat);
    await chat.connect({ callbackUrl: c.url, apiTools: 'none' });
    await chat.turn('Hi');
    const logged = await waitFor(() => lines.find((l) => l.msg === c.message));
    expect(logged.url ?? logged.callbackUrl).toBe(`${c.url.split('?')[0]}?[redacted]`);
  }
  expect(JSON.stringify(lines)).not.toContain(SECRET);
});

it('tells the user the model provider could not be reached, and the log why (its address)', async () => {
  const chat = new ChatClient(server.url, await userIdentity(app, server.url, 'unreached', ['writer']));
  chats.push(chat);
  await chat.connect({ apiTools: 'none' });
  const address = new URL(model.url).host;
  await model.close(); // the provider is gone: every attempt is refused
  const events = await chat.turn('Anyone there?');
  expect(events.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'failed', error: 'the model provider could not be reached' });
  expect(events.filter((e) => e.type === 'error').map((e) => e.message)).toContain('the model provider could not be reached; retrying');
  expect(JSON.stringify(events)).not.toContain(address);
  expect(JSON.stringify(events)).not.toContain('ECONNREFUSED');
  const logged = await waitFor(() => lines.find((l) => l.msg === 'the model provider could not be reached'));
  expect(String(logged.problem)).toContain(`ECONNREFUSED ${address}`);
});
