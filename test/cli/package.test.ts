/**
 * svc installed the way a newcomer installs it (issue 32 §3): `npm pack` of this repository (already
 * built), `npm install --save-dev <tarball>` in a fresh folder outside the repository, then the
 * README's commands through `npx`: `svc init .`, `svc generate`, `svc service-account create`,
 * `svc serve` on a free port, a create and a list through the API, the console at `/_/`, and
 * `npx tsc -p .` type-checking function code against `svc/runtime`.
 *
 * The install is real: dependency tarballs come from the npm cache (warm after `npm ci`) with
 * `--prefer-offline`; npm still asks the registry for package metadata, which `npm ci` does not cache,
 * so `--offline` alone fails (ENOTCACHED). Install scripts run: better-sqlite3 needs its native build
 * (a prebuilt binary when reachable, else node-gyp compiles SQLite, which takes minutes on a slow machine).
 * Nothing is written into the repository: the tarball and the app live under os.tmpdir().
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/cli.js';

const OWN = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
};
const work = mkdtempSync(join(tmpdir(), 'svc-package-'));
const app = join(work, 'myapp');
let server: ChildProcess | undefined;

/**
 * better-sqlite3's install downloads a prebuilt binary for this Node.js (prebuild-install) and compiles
 * SQLite only when that fails, as it does on a machine without GitHub (2.5 minutes of CPU on 2 cores).
 * The test hands it the binary this checkout's own install already has, as the same tarball the
 * download would fetch, through prebuild-install's `local_prebuilds` setting: the install is otherwise
 * the one a user's npm runs.
 */
const PREBUILDS = ((): Record<string, string> => {
  const dir = join(work, 'prebuilds');
  const source = join(ROOT, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-czf', join(dir, name), '-C', source, 'build/Release/better_sqlite3.node']);
  return { npm_config_better_sqlite3_local_prebuilds: dir };
})();

interface Run {
  code: number | null;
  out: string;
}

/** Runs `cmd args` in `cwd` to completion, stdout and stderr together. */
function run(cmd: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...PREBUILDS, SVC_LOG_LEVEL: 'warn' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', fail);
    child.on('close', (code) => ok({ code, out }));
  });
}

const timings: Record<string, number> = {};
async function timed<T>(label: string, f: () => Promise<T>): Promise<T> {
  const t = Date.now();
  try {
    return await f();
  } finally {
    timings[label] = Date.now() - t;
  }
}

let tarball = '';

beforeAll(async () => {
  expect(existsSync(join(ROOT, 'dist/cli/index.js')), 'build first (npm run build)').toBe(true);
  // --ignore-scripts: no `prepare` rebuild; the tarball takes dist/ as built.
  const pack = await timed('pack', () => run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT));
  expect(pack.code, pack.out).toBe(0);
  const [info] = JSON.parse(pack.out.slice(pack.out.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info.filename);
  const files = info.files.map((f) => f.path);
  expect(files).toEqual(
    expect.arrayContaining([
      'dist/cli/index.js',
      'dist/runtime/index.d.ts',
      'dist/console/index.html',
      'dist/templates/init/svc.json.hbs',
      'dist/schemas/svc.schema.json',
      'README.md',
      'package.json',
    ]),
  );
  expect(files.filter((f) => /^(test|examples|bench|scripts|console|runtime|generator|cli)\/|\.map$|\.test\./.test(f))).toEqual([]);
  mkdirSync(app);
}, 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((done) => server!.on('close', done));
    process.kill(-server.pid!, 'SIGTERM');
    await exited;
  }
  rmSync(work, { recursive: true, force: true });
  console.log(`package.test timings (ms): ${JSON.stringify(timings)}`);
});

describe(`svc installed from its tarball (${OWN.name}) in a folder outside the repository`, () => {
  it('npm install, npx svc init/generate/service-account/serve, CRUD, the console, npx tsc', async () => {
    expect(realpathSync(app).startsWith(realpathSync(ROOT))).toBe(false);
    const install = await timed('npm install', () => run('npm', ['install', '--save-dev', '--prefer-offline', '--no-audit', '--no-fund', tarball], app));
    expect(install.code, install.out).toBe(0);
    expect(existsSync(join(app, 'node_modules', OWN.name, 'dist/cli/index.js'))).toBe(true);

    const init = await timed('init', () => run('npx', ['svc', 'init', '.'], app));
    expect(init.code, init.out).toBe(0);
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    // The install's own entry stays; init adds the TypeScript svc itself uses.
    expect(pkg.devDependencies[OWN.name]).toMatch(/^file:.*\.tgz$/);
    expect(pkg.devDependencies.typescript).toBe(OWN.dependencies.typescript);

    const generate = await timed('generate', () => run('npx', ['svc', 'generate'], app));
    expect(generate.code, generate.out).toBe(0);
    // Generated code's `svc/runtime` is this install of the package, under its own name.
    expect(realpathSync(join(app, '.svc/node_modules/svc'))).toBe(realpathSync(join(app, 'node_modules', OWN.name)));

    const account = await timed('service-account', () => run('npx', ['svc', 'service-account', 'create', '--name', 'admin', '--admin'], app));
    expect(account.code, account.out).toBe(0);
    const { clientId, clientSecret } = JSON.parse(account.out.slice(account.out.indexOf('{'))) as { clientId: string; clientSecret: string };

    const url = await timed(
      'serve',
      () =>
        new Promise<string>((ok, fail) => {
          // Its own process group, so afterAll's SIGTERM reaches svc under npx.
          server = spawn('npx', ['svc', 'serve', '--port', '0'], { cwd: app, detached: true, env: { ...process.env, SVC_LOG_LEVEL: 'info' } });
          let out = '';
          const seen = (d: Buffer) => {
            out += d;
            const m = /serving \S+ at (http:\/\/\S+)/.exec(out);
            if (m) ok(m[1]);
          };
          server.stdout!.on('data', seen);
          server.stderr!.on('data', seen);
          server.on('close', (code) => fail(new Error(`npx svc serve exited (${code}) before serving: ${out}`)));
        }),
    );
    const token = (await (
      await fetch(`${url}/_token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
      })
    ).json()) as { access_token: string };
    const auth = { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' };
    const created = await fetch(`${url}/Project`, { method: 'POST', headers: auth, body: JSON.stringify({ title: 'From the tarball' }) });
    expect(created.status, await created.clone().text()).toBe(201);
    const list = (await (await fetch(`${url}/Project`, { headers: auth })).json()) as unknown;
    expect(JSON.stringify(list)).toContain('From the tarball');
    const consolePage = await fetch(new URL('/_/', url));
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain('<html');

    // The generated README's type check runs the local TypeScript against the installed runtime's types.
    mkdirSync(join(app, 'functions'), { recursive: true });
    writeFileSync(
      join(app, 'functions/hello.ts'),
      "import type { FunctionContext } from 'svc/runtime';\n\nexport default (ctx: FunctionContext) => ({ hello: ctx.me?.username ?? 'anonymous' });\n",
    );
    const tsc = await timed('tsc', () => run('npx', ['tsc', '-p', '.'], app));
    expect(tsc.code, tsc.out).toBe(0);
  }, 900_000);
});
