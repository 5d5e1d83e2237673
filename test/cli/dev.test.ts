/**
 * `svc dev` (DESIGN §10) as a real process on each backend: an edit of a definition is served by a new
 * version swapped in-process (OpenAPI and API), an invalid or half-saved edit prints its problems with
 * file and JSON path while the last good version keeps answering, a function edit reloads the
 * function workers, a `public/` edit is served at once with `no-cache`, a WebSocket connection opened
 * first stays open and keeps receiving through every reload, a drop of stored data is refused without a
 * terminal and applied with `--accept-data-loss` after a backup (SQLite), a trigger added to the folder
 * is installed, named in the reload line and fires (and a column drop works beside it), a trigger
 * removed is dropped, and SIGTERM exits 0. Waits
 * are on printed reload lines and HTTP answers, never sleeps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebPubSubClient, type OnGroupDataMessageArgs } from '@azure/web-pubsub-client';
import { CLI } from '../support/cli.js';
import { backends, createPgDatabase, type Backend } from '../support/backends.js';
import { waitFor } from '../support/wait.js';
import { selectRows } from '../support/system-tables.js';

const ANYONE = ['_ANONYMOUS_USER'];
const RELOAD_MS = 60_000;

/** The app's Note collection with `extra` properties beside `title`. */
const note = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    name: 'Note',
    properties: { title: { type: 'string', required: true }, ...extra },
    access: ['GET', 'POST', 'PATCH', 'DELETE', 'LISTEN'].map((method) => ({ method, roleNames: ANYONE })),
  });
const hello = (answer: number) => `export default async () => ({ answer: ${answer} });\n`;

/** A small app folder: one collection, one function, one page. */
function writeApp(dir: string): void {
  for (const sub of ['collections', 'functions', 'public']) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'devapp' }));
  writeFileSync(join(dir, 'collections/Note.json'), note());
  writeFileSync(join(dir, 'functions/hello.json'), JSON.stringify({ name: 'hello', functionTypeId: 1, endpoint: '/hello', access: { GET: ANYONE } }));
  writeFileSync(join(dir, 'functions/hello.ts'), hello(1));
  writeFileSync(join(dir, 'public/index.html'), '<p>one</p>\n');
  // Writes a Note "waiting", then answers once a Note titled "go" exists: a request held in flight.
  writeFileSync(join(dir, 'functions/waitGo.json'), JSON.stringify({ name: 'waitGo', functionTypeId: 1, endpoint: '/waitGo', access: { GET: ANYONE } }));
  writeFileSync(
    join(dir, 'functions/waitGo.ts'),
    `type Api = { get(name: string, params: object): Promise<{ data: unknown[] }>; post(name: string, body: object): Promise<unknown> };
export default async ({ get, post }: Api) => {
  await post('Note', { title: 'waiting' });
  for (;;) {
    if ((await get('Note', { filter: 'title eq "go"' })).data.length > 0) return { waited: true };
    await new Promise((ok) => setTimeout(ok, 20));
  }
};
`,
  );
}

/** A running `svc dev`: its URL and everything it printed. */
interface Dev {
  url: string;
  child: ChildProcess;
  out(): string;
  err(): string;
  /** Waits until stdout + stderr hold `count` matches of `pattern` (reload lines accumulate). */
  printed(pattern: RegExp, count?: number): Promise<string>;
  close(): Promise<number | null>;
}

function startDev(dir: string, env: NodeJS.ProcessEnv, args: string[] = []): Promise<Dev> {
  const child = spawn(process.execPath, [CLI, 'dev', dir, '--port', '0', ...args], { env: { ...process.env, SVC_LOG_LEVEL: 'error', ...env } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  const all = () => out + err;
  const printed = async (pattern: RegExp, count = 1) => {
    const global = new RegExp(pattern.source, 'g');
    return waitFor(() => ((all().match(global)?.length ?? 0) >= count ? all() : undefined), RELOAD_MS);
  };
  return new Promise((ok, fail) => {
    exited.then((code) => fail(new Error(`svc dev exited (${code}) before serving: ${err || out}`)));
    waitFor(() => /serving \S+ at (http:\/\/\S+)\n/.exec(out), RELOAD_MS).then(
      (m) =>
        ok({
          url: m[1],
          child,
          out: () => out,
          err: () => err,
          printed,
          close: () => {
            child.kill('SIGTERM');
            return exited;
          },
        }),
      fail,
    );
  });
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, headers: r.headers };
}

const post = (url: string, body: unknown) => json(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const noteSchema = async (base: string) => (await json(`${base}/_openapi`)).body.components.schemas.Note.properties as Record<string, unknown>;

describe.each(backends())('svc dev (%s)', (backend: Backend) => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let drop: (() => Promise<void>) | undefined;
  let dev: Dev;
  let ws: WebPubSubClient;
  const messages: OnGroupDataMessageArgs['message'][] = [];
  const connections: string[] = [];
  let disconnects = 0;
  /** Reload lines seen so far (each reload prints one). */
  let reloads = 0;
  const reloaded = async () => {
    reloads += 1;
    return dev.printed(/svc dev: .* changed: .*\(\d+ ms\)/, reloads);
  };
  const edit = (file: string, text: string) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  };
  /** Reload lines printed so far (after edits whose reloads are awaited by their own lines). */
  const reloadLines = () => (dev.out() + dev.err()).match(/svc dev: .* changed: .*\(\d+ ms\)/g)?.length ?? 0;
  /** svc's capture triggers in the database (DESIGN §12). */
  const installedTriggers = async () =>
    (
      await selectRows(
        env,
        backend === 'sqlite'
          ? "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'svc_trg_%' ORDER BY name"
          : "SELECT tgname AS name FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'svc_trg_%' ORDER BY tgname",
      )
    ).map((r) => String(r.name));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-dev-'));
    writeApp(dir);
    const pgdb = backend === 'postgresql' ? await createPgDatabase() : undefined;
    drop = pgdb?.drop;
    env = { DATABASE_URL: pgdb ? pgdb.url : `file:${join(dir, 'data', 'app.db')}` };
    dev = await startDev(dir, env);
    ws = new WebPubSubClient({ getClientAccessUrl: async () => (await json(`${dev.url}/_rt/ws`)).body.url }, { messageRetryOptions: { maxRetries: 0 } });
    ws.on('connected', (e) => connections.push(e.connectionId));
    ws.on('disconnected', () => (disconnects += 1));
    ws.on('group-message', (e) => messages.push(e.message));
    await ws.start();
    await waitFor(() => connections.length > 0);
    expect((await post(`${dev.url}/Note/_listen`, { connectionId: connections[0], type: 'ws' })).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    ws?.stop();
    await dev?.close();
    await drop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says at start that it is for one machine, and serves the app', async () => {
    expect(dev.out()).toContain("svc dev: for one developer's machine");
    expect(readdirSync(join(dir, 'migrations', backend)).filter((m) => !m.endsWith('.toml'))).toEqual([expect.stringMatching(/^\d+_init$/)]);
    expect((await post(`${dev.url}/Note`, { title: 'first' })).status).toBe(201);
    expect((await json(`${dev.url}/hello`)).body).toEqual({ answer: 1 });
  });

  it('serves a property added to a collection in the OpenAPI document and the API', async () => {
    edit('collections/Note.json', note({ color: { type: 'string' } }));
    const line = await reloaded();
    expect(line).toMatch(/collections\/Note\.json changed: migration \d+_dev applied, new version swapped in \(\d+ ms\)/);
    expect(readdirSync(join(dir, 'migrations', backend)).some((m) => m.endsWith('_dev'))).toBe(true);
    expect(await noteSchema(dev.url)).toHaveProperty('color');
    const created = await post(`${dev.url}/Note`, { title: 'red one', color: 'red' });
    expect(created.status).toBe(201);
    expect((await json(`${dev.url}/Note/${created.body.data[0]}`)).body.color).toBe('red');
  });

  it('lets a request in flight finish on the version it started on', async () => {
    const inFlight = json(`${dev.url}/waitGo`);
    let settled = false;
    void inFlight.then(() => (settled = true));
    // The request is running in the function before the edit.
    await waitFor(async () => (await json(`${dev.url}/Note?filter=${encodeURIComponent('title eq "waiting"')}`)).body.data.length > 0, RELOAD_MS);
    edit('svc.json', JSON.stringify({ name: 'devapp', auth: { accessTokenTtlSeconds: 1800 } }));
    expect(await reloaded()).toMatch(/svc\.json changed: new version swapped in/);
    expect(settled).toBe(false);
    expect((await post(`${dev.url}/Note`, { title: 'go' })).status).toBe(201);
    expect(await inFlight).toMatchObject({ status: 200, body: { waited: true } });
  });

  it('prints the problems of an invalid edit with file and JSON path, and keeps serving the last good version', async () => {
    edit('collections/Note.json', note({ color: { type: 'string' }, size: { type: 'colour' } }));
    await reloaded();
    expect(dev.err()).toMatch(/collections\/Note\.json: \/properties\/size\/type: unknown property type "colour"/);
    expect(dev.err()).toMatch(/collections\/Note\.json changed: 1 problem; still serving the last good version/);
    expect((await json(`${dev.url}/Note?filter=${encodeURIComponent('color eq "red"')}`)).body.data).toHaveLength(1);
    // A half-saved file is one more problem, not a crash.
    edit('collections/Note.json', '{ "name": "Note", "proper');
    await reloaded();
    expect(dev.err()).toMatch(/collections\/Note\.json: .*JSON/);
    expect((await json(`${dev.url}/Note`)).status).toBe(200);
    // Fixed: the next version is swapped in.
    edit('collections/Note.json', note({ color: { type: 'string' }, size: { type: 'integer' } }));
    expect(await reloaded()).toMatch(/new version swapped in/);
    expect(await noteSchema(dev.url)).toHaveProperty('size');
    const big = await post(`${dev.url}/Note`, { title: 'big', size: 9 });
    expect((await json(`${dev.url}/Note/${big.body.data[0]}`)).body.size).toBe(9);
  });

  it('reloads the function workers for a function edit: the new code answers', async () => {
    edit('functions/hello.ts', hello(2));
    expect(await reloaded()).toMatch(/functions\/hello\.ts changed: function workers reloaded/);
    expect((await json(`${dev.url}/hello`)).body).toEqual({ answer: 2 });
    edit('functions/hello.ts', 'export default async () => ({ answer: ');
    await reloaded();
    expect(dev.err()).toMatch(/functions\/hello\.ts/);
    expect((await json(`${dev.url}/hello`)).body).toEqual({ answer: 2 });
    edit('functions/hello.ts', hello(3));
    await reloaded();
    expect((await json(`${dev.url}/hello`)).body).toEqual({ answer: 3 });
    // A shared module: every function that imports it runs the new one.
    mkdirSync(join(dir, 'functions/lib'));
    edit('functions/lib/num.ts', 'export const num = 4;\n');
    await reloaded();
    edit('functions/hello.ts', "import { num } from './lib/num.js';\nexport default async () => ({ answer: num });\n");
    await reloaded();
    expect((await json(`${dev.url}/hello`)).body).toEqual({ answer: 4 });
    edit('functions/lib/num.ts', 'export const num = 5;\n');
    expect(await reloaded()).toMatch(/functions\/lib\/num\.ts changed: function workers reloaded/);
    expect((await json(`${dev.url}/hello`)).body).toEqual({ answer: 5 });
  });

  it('serves a public/ edit at once, with Cache-Control: no-cache', async () => {
    const page = await fetch(dev.url.replace(/\/api$/, '/'));
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(await page.text()).toContain('one');
    edit('public/index.html', '<p>two</p>\n');
    await reloaded();
    const again = await fetch(dev.url.replace(/\/api$/, '/index.html'));
    expect(again.headers.get('cache-control')).toBe('no-cache');
    expect(await again.text()).toContain('two');
  });

  it('applies auth, mail, cors, trustedProxies and publicUrl from svc.json on the swap, and names what needs a restart', async () => {
    const preflight = () => fetch(`${dev.url}/Note`, { method: 'OPTIONS', headers: { origin: 'http://front.test', 'access-control-request-method': 'POST' } });
    const signUp = (username: string) => post(`${dev.url}/_signup`, { username, password: 'correct horse battery staple' });
    expect((await signUp('before')).status).toBe(403);
    expect((await preflight()).headers.get('access-control-allow-origin')).toBeNull();
    edit(
      'svc.json',
      JSON.stringify({
        name: 'devapp',
        auth: { signup: { enabled: true, requireEmailVerification: false } },
        mail: { from: 'Dev <dev@front.test>' },
        cors: { origins: ['http://front.test'] },
        trustedProxies: ['10.0.0.1'],
        publicUrl: 'http://localhost:5999',
      }),
    );
    expect(await reloaded()).toMatch(/svc\.json changed: new version swapped in/);
    expect((await signUp('after')).status).toBe(201);
    expect((await preflight()).headers.get('access-control-allow-origin')).toBe('http://front.test');
    expect((await json(`${dev.url}/_openapi`)).body.servers).toEqual([{ url: 'http://localhost:5999/api' }]);
    // A setting read once at start is named, not silently ignored; the rest is applied.
    edit('svc.json', JSON.stringify({ name: 'devapp', realtime: { maxMessagesPerSecond: 500 } }));
    expect(await reloaded()).toMatch(/restart svc dev to apply svc\.json realtime/);
    expect((await signUp('off again')).status).toBe(403);
    expect((await preflight()).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('keeps a WebSocket connection opened before the reloads open, and it still receives', async () => {
    const before = messages.length;
    const created = await post(`${dev.url}/Note`, { title: 'after reloads', size: 1 });
    expect(created.status).toBe(201);
    await waitFor(() => messages.slice(before).some((m) => JSON.stringify(m.data).includes(created.body.data[0])));
    expect(connections).toHaveLength(1);
    expect(disconnects).toBe(0);
  });

  it('installs a new trigger on the reload, names it, and it fires', async () => {
    edit('functions/seeNote.json', JSON.stringify({ name: 'seeNote', functionTypeId: 2, endpoint: '/seeNote', access: {} }));
    edit('functions/seeNote.ts', "export default async (ctx: any) => { await ctx.post('Note', { title: `seen ${ctx.event.after.title}` }); return {}; };\n");
    await dev.printed(/svc dev: .*seeNote.* changed: .*\(\d+ ms\)/);
    // The function's own write ("seen …") does not match the filter, so it does not fire again.
    edit('triggers/watch.json', JSON.stringify({ name: 'watch', collection: 'Note', on: ['create'], filter: 'title sw "fire"', function: 'seeNote' }));
    await dev.printed(/triggers now watch/);
    expect((await post(`${dev.url}/Note`, { title: 'fire-1' })).status).toBe(201);
    await waitFor(async () => (await json(`${dev.url}/Note?filter=title eq "seen fire-1"`)).body.data.length === 1, 20_000);
    expect(await installedTriggers()).toEqual(['svc_trg_Note_watch' + (backend === 'sqlite' ? '_create' : '')]);
    reloads = reloadLines();
  });

  it('drops a column that holds no data without asking', async () => {
    edit('collections/Note.json', note({ color: { type: 'string' }, size: { type: 'integer' }, scratch: { type: 'text' } }));
    await reloaded();
    expect(await noteSchema(dev.url)).toHaveProperty('scratch');
    edit('collections/Note.json', note({ color: { type: 'string' }, size: { type: 'integer' } }));
    expect(await reloaded()).toMatch(/collections\/Note\.json changed: migration \d+_dev applied, new version swapped in/);
    expect(await noteSchema(dev.url)).not.toHaveProperty('scratch');
  });

  it('drops the trigger removed from the folder on the reload', async () => {
    // The column drop above ran with the trigger installed (SQLite refuses DROP COLUMN a trigger names).
    expect(await installedTriggers()).toHaveLength(1);
    rmSync(join(dir, 'triggers/watch.json'));
    await dev.printed(/triggers now none/);
    expect(await installedTriggers()).toEqual([]);
    reloads = reloadLines();
  });

  it('refuses an edit that drops stored data without a terminal, and keeps serving', async () => {
    edit('collections/Note.json', note({ size: { type: 'integer' } }));
    const out = await reloaded();
    expect(out).toMatch(/collections\/Note\.json: \/properties\/color: property "color" is gone/);
    expect(out).toMatch(/changed: refused: it drops data: .*--accept-data-loss/);
    expect(await noteSchema(dev.url)).toHaveProperty('color');
    expect(existsSync(join(dir, '.svc', 'backups'))).toBe(false);
  });

  it('applies it with --accept-data-loss after backing the SQLite file up, and SIGTERM exits 0', async () => {
    ws.stop();
    expect(await dev.close()).toBe(0);
    dev = await startDev(dir, env, ['--accept-data-loss']);
    reloads = 0;
    const line = await reloaded();
    const backups = existsSync(join(dir, '.svc', 'backups')) ? readdirSync(join(dir, '.svc', 'backups')) : [];
    if (backend === 'sqlite') {
      expect(line).toMatch(/database backed up to \.svc\/backups\/\d+\.db, migration \d+_dev applied, new version swapped in/);
      expect(backups).toHaveLength(1);
    } else {
      expect(line).toMatch(/migration \d+_dev applied, new version swapped in/);
      expect(backups).toHaveLength(0);
    }
    expect(await noteSchema(dev.url)).not.toHaveProperty('color');
    const notes = (await json(`${dev.url}/Note?filter=${encodeURIComponent('title eq "red one"')}`)).body.data;
    expect(notes).toHaveLength(1);
    expect(notes[0]).not.toHaveProperty('color');
  });
});
