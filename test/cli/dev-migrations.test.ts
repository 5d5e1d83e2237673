/**
 * `svc dev` and migrations that cannot strand it (issue 31 §4), as a real process on SQLite: an edit
 * making a property required while stored rows hold null is refused by the same check as `svc
 * generate` (the problem printed, the last good version serving, no migration written); an edit whose
 * `_dev` migration fails when applied (a string turned into a lookup while a row holds a value that
 * points at no row) is rolled back and dropped by `svc dev` itself, so undoing the edit recovers with
 * no manual step; and a `_dev` migration left failing (made required where the check could not see the
 * rows, with the reverting edit's migration queued behind it: the user's reported state, in which `svc
 * serve` refuses to start) is dropped at start. Waits are on printed lines and HTTP answers, never sleeps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, runCli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const ANYONE = ['_ANONYMOUS_USER'];
const WAIT_MS = 60_000;

/** The Event collection with `organizer` and `organizerEmail` as given. */
const event = (organizer: Record<string, unknown>, organizerEmail?: Record<string, unknown>) =>
  JSON.stringify({
    name: 'Event',
    properties: { title: { type: 'string', required: true }, organizer, ...(organizerEmail && { organizerEmail: { type: 'string', ...organizerEmail } }) },
    access: ['GET', 'POST', 'PATCH'].map((method) => ({ method, roleNames: ANYONE })),
  });
const person = JSON.stringify({ name: 'Person', properties: { name: { type: 'string' } }, access: [{ method: 'GET', roleNames: ANYONE }] });
const STRING = { type: 'string' };
const LOOKUP = { type: 'lookup', collection: 'Person' };

interface Dev {
  url: string;
  all(): string;
  printed(pattern: RegExp, count?: number): Promise<string>;
  close(): Promise<number | null>;
}

function startDev(dir: string, env: NodeJS.ProcessEnv): Promise<Dev> {
  const child: ChildProcess = spawn(process.execPath, [CLI, 'dev', dir, '--port', '0'], { env: { ...process.env, SVC_LOG_LEVEL: 'error', ...env } });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  const printed = (pattern: RegExp, count = 1) => {
    const global = new RegExp(pattern.source, 'g');
    return waitFor(() => ((out.match(global)?.length ?? 0) >= count ? out : undefined), WAIT_MS);
  };
  return new Promise((ok, fail) => {
    exited.then((code) => fail(new Error(`svc dev exited (${code}) before serving: ${out}`)));
    waitFor(() => /serving \S+ at (http:\/\/\S+)/.exec(out), WAIT_MS).then(
      (m) => ok({ url: m[1], all: () => out, printed, close: () => (child.kill('SIGTERM'), exited) }),
      fail,
    );
  });
}

const send = async (url: string, method = 'GET', body?: unknown) => {
  const r = await fetch(url, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
};

describe('svc dev and failing migrations (sqlite)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let dev: Dev;
  let id: string;
  const migrations = () => readdirSync(join(dir, 'migrations', 'sqlite')).filter((n) => !n.endsWith('.toml'));
  const edit = (organizer: Record<string, unknown>, organizerEmail?: Record<string, unknown>) =>
    writeFileSync(join(dir, 'collections', 'Event.json'), event(organizer, organizerEmail));
  /** Reload lines seen so far: each edit prints one. */
  let lines = 0;
  const reloaded = () => dev.printed(/changed: /, ++lines);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-dev-migrations-'));
    mkdirSync(join(dir, 'collections'));
    writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'devmig' }));
    writeFileSync(join(dir, 'collections', 'Person.json'), person);
    edit(STRING);
    env = { DATABASE_URL: `file:${join(dir, 'data', 'app.db')}` };
    dev = await startDev(dir, env);
    const r = await send(`${dev.url}/Event`, 'POST', { title: 'launch', organizer: 'nobody' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    id = r.body.data[0];
  }, 120_000);
  afterAll(async () => {
    await dev?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an edit making a property required while rows hold null is refused with the rows named; the last good version keeps serving', async () => {
    edit(STRING, {});
    expect(await reloaded()).toMatch(/migration \S+_dev applied/);
    const before = migrations();
    edit(STRING, { required: true });
    const out = await reloaded();
    expect(out).toContain(
      `collections/Event.json: /properties/organizerEmail/required: Event.organizerEmail cannot be made required: 1 stored row (id ${id}) hold no value`,
    );
    expect(out).toMatch(/1 problem; still serving the last good version/);
    expect(migrations()).toEqual(before);
    expect((await send(`${dev.url}/Event`, 'POST', { title: 'no email yet', organizer: 'x' })).status).toBe(201);
    edit(STRING, {});
    await reloaded();
    expect(migrations()).toEqual(before);
  }, 120_000);

  it('an edit whose _dev migration fails is rolled back and dropped, and undoing the edit recovers with no manual step', async () => {
    const before = migrations();
    edit(LOOKUP, {});
    const out = await reloaded();
    expect(out).toMatch(
      /migrations\/sqlite\/\S+_dev: migration \S+_dev failed and was rolled back \(the database is as it was before it\): it leaves 2 rows whose lookups point at no row; svc dev dropped it/,
    );
    expect(out).toMatch(/still serving the last good version/);
    expect(migrations()).toEqual(before);
    const status = await runCli(['migrate', dir, '--status'], env);
    expect(JSON.parse(status.stdout)).toMatchObject({ pending: [], failed: [] });
    expect((await send(`${dev.url}/Event/${id}`)).body).toMatchObject({ organizer: 'nobody' });

    edit(STRING, {});
    expect((await reloaded()).trim().split('\n').at(-1)).toMatch(/changed: new version swapped in/);
    expect(migrations()).toEqual(before);
    expect((await send(`${dev.url}/Event`, 'POST', { title: 'after', organizer: 'y' })).status).toBe(201);
  }, 120_000);

  it('a _dev migration left failing, with another queued behind it, is dropped at start and svc dev serves', async () => {
    await dev.close();
    const before = migrations();
    // The reported state: a _dev migration making organizerEmail required, written where the check could not
    // see the rows (generated against another, empty database), then the reverting edit's _dev migration
    // queued behind it; svc serve refuses to start (NOT NULL constraint failed).
    edit(STRING, { required: true });
    const elsewhere = { DATABASE_URL: `file:${join(dir, 'data', 'other.db')}` };
    expect((await runCli(['generate', dir, '--name', 'dev'], elsewhere)).code).toBe(0);
    edit(STRING, {});
    expect((await runCli(['generate', dir, '--name', 'dev'], elsewhere)).code).toBe(0);
    expect(migrations()).toHaveLength(before.length + 2);
    const stuck = await runCli(['serve', dir, '--port', '0'], env);
    expect(stuck.code).toBe(1);
    expect(stuck.stderr).toMatch(/migration \S+_dev failed and was rolled back .*NOT NULL constraint failed/);

    lines = 0;
    dev = await startDev(dir, env);
    expect(dev.all()).toMatch(/svc dev: dropped \S+_dev, \S+_dev \(svc migrate --discard\); generating again/);
    expect(migrations()).toEqual(before);
    expect((await send(`${dev.url}/Event/${id}`)).body).toMatchObject({ organizer: 'nobody' });
  }, 180_000);
});
