/**
 * The `svc` command line of DESIGN §3a, run as a real process: help, init → generate → serve,
 * deterministic generation, migrations on model change, reporting every definition problem at once,
 * and SIGTERM draining in-flight requests.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { CLI, ROOT, runCli, serve, type CliResult } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { adminIdentity, createUser, userToken } from '../support/auth.js';

const work = mkdtempSync(join(tmpdir(), 'svc-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** sha256 of every file under `dir` except the linked node_modules. */
function treeHash(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const full = join(d, e);
      if (e === 'node_modules') continue;
      if (statSync(full).isDirectory()) walk(full);
      else out[relative(dir, full)] = createHash('sha256').update(readFileSync(full)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

let initialised: Promise<string> | undefined;

/**
 * A copy, at `work/<name>`, of one app folder made by `svc init` and `svc generate`, which run once
 * for the tests that start from there rather than test those commands (each run costs seconds of CPU).
 */
async function initialisedCopy(name: string): Promise<string> {
  initialised ??= (async () => {
    const dir = join(work, 'initialised');
    const init = await runCli(['init', dir]);
    expect(init.code, init.stderr).toBe(0);
    const gen = await runCli(['generate', dir]);
    expect(gen.code, gen.stderr).toBe(0);
    return dir;
  })();
  const dir = join(work, name);
  cpSync(await initialised, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

describe('svc CLI', () => {
  it.each([
    'init',
    'generate',
    'migrate',
    'serve',
    'openapi',
    'user create',
    'user delete',
    'user disable',
    'user set-roles',
    'service-account create',
    'service-account delete',
    'service-account disable',
  ])('prints help for %s', async (command) => {
    const r = await runCli([...command.split(' '), '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: svc ${command}`);
  });

  it('init → generate → serve gives a working API; generating again changes nothing', async () => {
    const dir = join(work, 'demo');
    const init = await runCli(['init', dir]);
    expect(init.code, init.stderr).toBe(0);
    expect((await runCli(['init', dir])).code).toBe(1); // never overwrites
    const gen = await runCli(['generate', dir]);
    expect(gen.code, gen.stderr).toBe(0);
    expect(gen.stdout).toContain('new migration');
    const before = treeHash(dir);
    const again = await runCli(['generate', dir]);
    expect(again.stdout).toContain('no model change');
    expect(treeHash(dir)).toEqual(before);
    expect(readdirSync(join(dir, 'migrations/sqlite')).filter((f) => f !== 'migration_lock.toml')).toHaveLength(1);

    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain('svc service-account create');
    // The first user, as the generated README says; the example's rules need a signed-in caller to write.
    await createUser({ dir, env: {} }, 'first', 'first-user-password', ['admin']);
    const server = await serve(dir);
    try {
      expect((await call(server.url, 'POST', '/Project', { title: 'Anonymous' })).status).toBe(401);
      const auth = (await userToken(server.url, 'first', 'first-user-password')).headers;
      const project = await call(server.url, 'POST', '/Project', { title: 'Launch' }, auth);
      expect(project.status).toBe(201);
      const task = await call(server.url, 'POST', '/Task', { title: 'Write docs', project: { id: project.json.data[0] } }, auth);
      expect(task.status).toBe(201);
      const list = await call(server.url, 'GET', '/Task?filter=project.title%20eq%20%22Launch%22');
      expect(list.json.data).toMatchObject([{ title: 'Write docs', done: false, priority: 'normal', project: { title: 'Launch' } }]);
    } finally {
      expect(await server.close()).toBe(0);
    }
    const doc = await runCli(['openapi', dir]);
    expect(JSON.parse(doc.stdout).paths).toHaveProperty('/Task/{id}');
  });

  it('generates openapi.json, agent-tools.json and client.ts with code types for an app with functions, byte-identical again', async () => {
    const dir = join(work, 'typed');
    cpSync(join(ROOT, 'test/fixtures/apps/typed'), dir, { recursive: true });
    const gen = await runCli(['generate', dir]);
    expect(gen.code, gen.stderr).toBe(0);
    for (const file of ['openapi.json', 'agent-tools.json', 'client.ts', 'manifest.json']) expect(existsSync(join(dir, '.svc', file)), file).toBe(true);
    const manifest = JSON.parse(readFileSync(join(dir, '.svc/manifest.json'), 'utf8'));
    const greet = manifest.functions.find((f: { name: string }) => f.name === 'greet');
    expect(greet.codeTypes.body.properties).toEqual({ name: { type: 'string' }, shout: { type: 'boolean' } });
    const before = treeHash(join(dir, '.svc'));
    expect((await runCli(['generate', dir])).code).toBe(0);
    expect(treeHash(join(dir, '.svc'))).toEqual(before);
    const doc = await runCli(['openapi', dir]);
    expect(JSON.parse(doc.stdout).paths).toHaveProperty('/greet');
  });

  it('svc openapi | head: a reader closing the pipe early ends the command quietly with 0, no EPIPE stack trace', async () => {
    const dir = join(work, 'epipe');
    mkdirSync(join(dir, '.svc'), { recursive: true });
    writeFileSync(join(dir, '.svc/openapi.json'), JSON.stringify({ padding: 'x'.repeat(2_000_000) }));
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((ok) => {
      const child = spawn(process.execPath, [CLI, 'openapi', dir]);
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.once('data', () => child.stdout.destroy()); // `head` has read enough
      child.on('close', (c) => ok({ code: c, stderr: err }));
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it("svc init's tsconfig gives function code svc's types: import type { FunctionContext } from 'svc/runtime' checks with tsc", async () => {
    const dir = join(work, 'typed-init');
    expect((await runCli(['init', dir])).code).toBe(0);
    mkdirSync(join(dir, 'functions'));
    writeFileSync(
      join(dir, 'functions/hello.json'),
      JSON.stringify({ name: 'hello', functionTypeId: 1, endpoint: '/hello', access: { GET: ['_ANONYMOUS_USER'] } }),
    );
    const code = (body: string) => `import type { FunctionContext } from 'svc/runtime';\n\nexport default (ctx: FunctionContext) => (${body});\n`;
    writeFileSync(join(dir, 'functions/hello.ts'), code("{ hello: ctx.me?.username ?? 'anonymous' }"));
    expect((await runCli(['generate', dir])).code).toBe(0);
    const tsc = (): Promise<CliResult> =>
      new Promise((ok) => {
        const child = spawn(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir]);
        let stdout = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.on('close', (code) => ok({ code, stdout, stderr: '' }));
      });
    const clean = await tsc();
    expect(clean.code, clean.stdout).toBe(0);
    // The types are real: a field FunctionContext does not have is an error.
    writeFileSync(join(dir, 'functions/hello.ts'), code('{ hello: ctx.nobody }'));
    const wrong = await tsc();
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout).toContain("Property 'nobody' does not exist on type 'FunctionContext");
    // The README's typed client import in an ES module under NodeNext (what svc init's tsconfig uses): './.svc/client.js' checks, './.svc/client' does not.
    const front = (from: string) => {
      writeFileSync(join(dir, 'front.mts'), `import { createClient } from '${from}';\nexport const api = createClient({ baseUrl: '/api' });\n`);
      return new Promise<CliResult>((ok) => {
        const args = [
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--target',
          'ES2022',
          '--module',
          'NodeNext',
          '--moduleResolution',
          'NodeNext',
          join(dir, 'front.mts'),
        ];
        const child = spawn(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), ...args]);
        let stdout = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.on('close', (code) => ok({ code, stdout, stderr: '' }));
      });
    };
    const withJs = await front('./.svc/client.js');
    expect(withJs.code, withJs.stdout).toBe(0);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain("from './.svc/client.js'");
    expect(readme).not.toMatch(/from '\.\/\.svc\/client'/);
    expect((await front('./.svc/client')).stdout).toMatch(/TS2835|explicit file extensions/);
  }, 240_000);

  it('generate skips every step when nothing changed, and runs them all again after any change to its inputs or outputs', async () => {
    const dir = join(work, 'skip');
    cpSync(join(ROOT, 'test/fixtures/apps/functions'), dir, { recursive: true });
    const first = await runCli(['generate', dir]);
    expect(first.code, first.stderr).toBe(0);
    const svcFiles = () => treeHash(join(dir, '.svc'));
    const before = svcFiles();
    const again = await runCli(['generate', dir]);
    // What a full run would say (warnings included), and nothing touched.
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: first.stderr });
    expect(again.stdout).toBe(`svc: generated ${join(dir, '.svc')} (2 collections, sqlite)\nsvc: no model change, no new migration\n`);
    expect(svcFiles()).toEqual(before);
    expect(again.stderr).toContain('warning'); // the fixture has a warning: replayed, not lost
    // A definition edit: generated again.
    const file = join(dir, 'collections/Note.json');
    const def = JSON.parse(readFileSync(file, 'utf8'));
    def.properties.mood = { type: 'string' };
    writeFileSync(file, JSON.stringify(def));
    expect((await runCli(['generate', dir])).stdout).toMatch(/new migration migrations\/sqlite\/\d{14}_update/);
    expect(readFileSync(join(dir, '.svc/openapi.json'), 'utf8')).toContain('mood');
    // A generated file removed by hand: written again.
    rmSync(join(dir, '.svc/openapi.json'));
    expect((await runCli(['generate', dir])).code).toBe(0);
    expect(existsSync(join(dir, '.svc/openapi.json'))).toBe(true);
    // Another database: generated for it.
    const pg = await runCli(['generate', dir], { DATABASE_URL: 'postgres://root@127.0.0.1:5432/postgres' });
    expect(pg.code, pg.stderr).toBe(0);
    expect(pg.stdout).toContain('postgresql');
  }, 240_000);

  it('emits the Prisma client only when asked: --prisma-client or svc.json generate.prismaClient', async () => {
    const dir = join(work, 'prisma-client');
    cpSync(join(ROOT, 'test/fixtures/apps/catalog'), dir, { recursive: true });
    const client = () => existsSync(join(dir, '.svc/client/client.js'));
    expect((await runCli(['generate', dir])).code).toBe(0);
    expect(client()).toBe(false);
    expect(existsSync(join(dir, '.svc/node_modules/svc/package.json'))).toBe(true); // generated code still finds svc
    const asked = await runCli(['generate', dir, '--prisma-client']);
    expect(asked.code, asked.stderr).toBe(0);
    expect(client()).toBe(true);
    expect((await runCli(['generate', dir])).code).toBe(0); // not asked again: the stale client goes
    expect(client()).toBe(false);
    const settings = JSON.parse(readFileSync(join(dir, 'svc.json'), 'utf8'));
    writeFileSync(join(dir, 'svc.json'), JSON.stringify({ ...settings, generate: { prismaClient: true } }));
    expect((await runCli(['generate', dir])).code).toBe(0);
    expect(client()).toBe(true);
    writeFileSync(join(dir, 'svc.json'), JSON.stringify({ ...settings, generate: { prismaClient: 'yes' } }));
    const bad = await runCli(['generate', dir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('generate/prismaClient');
  }, 240_000);

  it('writes a migration when the model changes; migrate and serve apply it', async () => {
    const dir = await initialisedCopy('evolve');
    expect((await runCli(['migrate', dir])).stdout).toContain('applied');
    expect((await runCli(['migrate', dir])).stdout).toContain('up to date');
    const file = join(dir, 'collections/Project.json');
    const def = JSON.parse(readFileSync(file, 'utf8'));
    def.properties.budget = { type: 'decimal', description: 'Budget in EUR' };
    writeFileSync(file, JSON.stringify(def, null, 2));
    const gen = await runCli(['generate', dir, '--name', 'add budget']);
    expect(gen.code, gen.stderr).toBe(0);
    const folders = readdirSync(join(dir, 'migrations/sqlite'))
      .filter((f) => f !== 'migration_lock.toml')
      .sort();
    expect(folders).toHaveLength(2);
    expect(folders[1]).toMatch(/^\d{14}_add_budget$/);
    expect(readFileSync(join(dir, 'migrations/sqlite', folders[1], 'migration.sql'), 'utf8')).toMatch(/ALTER TABLE "Project" ADD COLUMN "budget"/);
    const server = await serve(dir);
    try {
      const admin = (await adminIdentity({ dir, env: {} }, server.url)).headers;
      const created = await call(server.url, 'POST', '/Project', { title: 'Funded', budget: 1250.5 }, admin);
      expect(created.status).toBe(201);
      expect((await call(server.url, 'GET', `/Project/${created.json.data[0]}`)).json.budget).toBe(1250.5);
    } finally {
      await server.close();
    }
  });

  it('refuses a migration that cannot fill stored rows, and one that drops data unless --accept-data-loss; a refused generate writes nothing', async () => {
    const dir = join(work, 'notes');
    mkdirSync(join(dir, 'collections'), { recursive: true });
    writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'notes' }));
    const folderFile = join(dir, 'collections/Folder.json');
    const noteFile = join(dir, 'collections/Note.json');
    writeFileSync(folderFile, JSON.stringify({ name: 'Folder', properties: { name: { type: 'string', required: true } } }));
    writeFileSync(noteFile, JSON.stringify({ name: 'Note', properties: { title: { type: 'string' }, body: { type: 'text' } } }));
    expect((await runCli(['generate', dir])).code).toBe(0);
    const migrations = () => readdirSync(join(dir, 'migrations/sqlite')).filter((f) => f !== 'migration_lock.toml');
    const svcBefore = treeHash(join(dir, '.svc'));

    // A required property without a default on a collection that may hold rows.
    writeFileSync(
      folderFile,
      JSON.stringify({ name: 'Folder', properties: { name: { type: 'string', required: true }, color: { type: 'string', required: true } } }),
    );
    const unfillable = await runCli(['generate', dir, '--accept-data-loss']);
    expect(unfillable.code).toBe(1);
    expect(unfillable.stderr).toContain('collections/Folder.json: /properties/color: required property "color" has no default');
    expect(migrations()).toHaveLength(1);
    expect(treeHash(join(dir, '.svc'))).toEqual(svcBefore);
    // With a default it applies to existing rows.
    writeFileSync(
      folderFile,
      JSON.stringify({ name: 'Folder', properties: { name: { type: 'string', required: true }, color: { type: 'string', required: true, default: 'blue' } } }),
    );
    const filled = await runCli(['generate', dir]);
    expect(filled.code, filled.stderr).toBe(0);
    expect(migrations()).toHaveLength(2);

    // A rename (body → content) drops the column with its data: refused, then accepted and named.
    writeFileSync(noteFile, JSON.stringify({ name: 'Note', properties: { title: { type: 'string' }, content: { type: 'text' } } }));
    const lossy = await runCli(['generate', dir]);
    expect(lossy.code).toBe(1);
    expect(lossy.stderr).toContain('collections/Note.json: /properties/body: property "body" is gone (removed or renamed)');
    expect(lossy.stderr).toContain('--accept-data-loss');
    expect(migrations()).toHaveLength(2);
    rmSync(folderFile);
    writeFileSync(noteFile, JSON.stringify({ name: 'Note', properties: { title: { type: 'string' }, content: { type: 'text' } } }));
    const accepted = await runCli(['generate', dir, '--accept-data-loss']);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stderr).toContain('warning: collections/Note.json: /properties/body: property "body" is gone');
    expect(accepted.stderr).toContain('warning: collections/Folder.json: collection Folder is gone');
    expect(migrations()).toHaveLength(3);
  }, 240_000);

  it('reports every definition problem at once, exits non-zero and writes nothing', async () => {
    const dir = join(work, 'broken');
    mkdirSync(join(dir, 'collections'), { recursive: true });
    writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'broken', colour: 'red' }));
    // Schema problems in one file; model problems (cross-checks) in a schema-valid file beside it.
    writeFileSync(join(dir, 'collections/Item.json'), JSON.stringify({ name: 'Item', properties: { size: { type: 'huge' } } }));
    writeFileSync(
      join(dir, 'collections/Order.json'),
      JSON.stringify({
        name: 'Order',
        properties: { customer: { type: 'lookup', collection: 'Custmer' }, createdAt: { type: 'date-time' } },
        access: [{ method: 'LISTEN', roleNames: ['_CREATOR'] }],
      }),
    );
    writeFileSync(join(dir, 'collections/Bad.json'), '{ "name": "Bad", ');
    const r = await runCli(['generate', dir]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^collections\/Bad\.json: .*JSON/),
        expect.stringMatching(/^collections\/Order\.json: \/properties\/customer\/collection: .*Custmer/),
        expect.stringMatching(/^collections\/Order\.json: \/properties\/createdAt: /),
        expect.stringMatching(/^collections\/Item\.json: \/properties\/size\/type: .*huge/),
        expect.stringMatching(/^collections\/Order\.json: \/access\/0.*_CREATOR/),
        expect.stringMatching(/^svc\.json: \/colour: /),
      ]),
    );
    expect(lines.at(-1)).toMatch(/^svc: \d+ problems/);
    expect(existsSync(join(dir, '.svc'))).toBe(false);
    expect(existsSync(join(dir, 'migrations'))).toBe(false);
  });

  it('checks the filters of views, queries and policies at generate time, and writes nothing when one is bad', async () => {
    const dir = join(work, 'badfilters');
    for (const folder of ['collections', 'views', 'queries']) mkdirSync(join(dir, folder), { recursive: true });
    writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'badfilters' }));
    writeFileSync(
      join(dir, 'collections/Item.json'),
      JSON.stringify({
        name: 'Item',
        properties: { title: { type: 'string' }, size: { type: 'integer' }, owner: { type: 'guid' } },
        policies: [
          { roleNames: ['_AUTHENTICATED_USER'], filter: "owner eq exp('me()')" },
          { roleNames: ['x'], filter: 'colour eq "red"' },
        ],
      }),
    );
    writeFileSync(join(dir, 'views/Big.json'), JSON.stringify({ name: 'Big', collection: 'Item', filter: 'size gt "large"' }));
    writeFileSync(join(dir, 'views/Fine.json'), JSON.stringify({ name: 'Fine', collection: 'Item', filter: 'size gt 3 and title sw~ "a"' }));
    writeFileSync(join(dir, 'queries/Titles.json'), JSON.stringify({ name: 'Titles', from: 'Item', filter: 'title eq', fields: { t: 'title' } }));
    const r = await runCli(['generate', dir]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^collections\/Item\.json: \/policies\/1\/filter: .*unknown property "colour"/),
        expect.stringMatching(/^views\/Big\.json: \/filter: .*"large"/),
        expect.stringMatching(/^queries\/Titles\.json: \/filter: .*expected a value/),
      ]),
    );
    expect(lines.some((l) => l.includes('Fine.json') || l.includes('/policies/0/'))).toBe(false);
    expect(existsSync(join(dir, '.svc'))).toBe(false);
  });

  it.each([
    ['a missing folder', 'nowhere', false, /^svc: .*nowhere does not exist: an app folder holds svc\.json/],
    ['a folder without svc.json', 'no-svc-json', true, /^svc: svc\.json not found: .*no-svc-json is not an app folder/],
  ])('generate on %s prints one line and exits 1, writing nothing', async (_title, name, create, line) => {
    const dir = join(work, name);
    if (create) mkdirSync(dir, { recursive: true });
    const r = await runCli(['generate', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(line)]);
    expect(existsSync(join(dir, '.svc'))).toBe(false);
  });

  it('refuses to serve without generated output, with a one-line reason', async () => {
    const dir = join(work, 'empty');
    mkdirSync(dir, { recursive: true });
    const r = await runCli(['serve', dir, '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('svc generate');
  });

  it('refuses a --drain that is not 0 to 300 seconds, naming the option', async () => {
    for (const bad of ['soon', '-1', '301', '']) {
      const r = await runCli(['serve', join(work, 'empty'), '--drain', bad]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/--drain.*must be a number of seconds from 0 to 300/);
    }
  });

  it('finishes an in-flight request on SIGTERM, then exits 0', async () => {
    const dir = await initialisedCopy('drain');
    const server = await serve(dir);
    const { token } = await adminIdentity({ dir, env: {} }, server.url);
    const { port } = new URL(server.url);
    const body = JSON.stringify({ title: 'sent across a SIGTERM' });
    const socket = connect(Number(port), '127.0.0.1');
    let response = '';
    socket.on('data', (d) => {
      response += d;
    });
    const ended = new Promise((ok) => socket.on('close', ok));
    await new Promise((ok) => socket.once('connect', ok));
    // Headers and half the body now; SIGTERM; the rest of the body after the server began draining.
    socket.write(
      `POST /api/Project HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    const exit = server.close();
    await new Promise((r) => setTimeout(r, 200));
    socket.write(body.slice(10)); // not end(): a half-closed client socket aborts the request
    await ended;
    expect(response).toMatch(/^HTTP\/1\.1 201/);
    expect(await exit).toBe(0);
  });

  it('started through npm exec (npx svc serve), stops when npm is killed instead of living on', async () => {
    const dir = await initialisedCopy('orphan');
    const npm = spawn('npm', ['exec', '--', 'node', CLI, 'serve', dir, '--port', '0'], { cwd: ROOT, env: { ...process.env, SVC_LOG_LEVEL: 'info' } });
    let out = '';
    const url = await new Promise<string>((ok, fail) => {
      npm.stdout.on('data', (d) => {
        out += d;
        const m = /serving \S+ at (http:\/\/\S+)\n/.exec(out);
        if (m) ok(m[1]);
      });
      npm.on('close', () => fail(new Error(`npm exec ended before serving: ${out}`)));
    });
    expect((await fetch(`${url}/_health`)).status).toBe(200);
    npm.kill('SIGTERM'); // what `kill $!` after `npx svc serve … &` does: npm passes nothing on
    const deadline = Date.now() + 10_000;
    let answering = true;
    while (answering && Date.now() < deadline) {
      answering = await fetch(`${url}/_health`).then(
        () => true,
        () => false,
      );
      if (answering) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answering).toBe(false);
  }, 120_000);
});
