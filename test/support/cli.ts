/**
 * @module Runs the built `svc` CLI (`dist/cli/index.js`) as a real process, and serves apps with it
 * on a free loopback port. Servers are disposable: `close()` sends SIGTERM and waits for the exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { createPgDatabase, type Backend } from './backends.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist/cli/index.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` to completion. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT): Promise<CliResult> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', fail);
    child.on('close', (code) => ok({ code, stdout, stderr }));
  });
}

export interface TestServer {
  /** `http://127.0.0.1:<port>/api` */
  url: string;
  child: ChildProcess;
  /**
   * The whole lines the process printed to stdout so far (pino JSON lines and the banner), each with
   * its newline. A line still being written (a pipe read can end in the middle of one) is left out
   * until it is complete, so every line split from this parses.
   */
  output(): string;
  /** SIGTERM, then waits for exit; resolves to the exit code. */
  close(): Promise<number | null>;
}

/** Starts `svc serve <dir> --port 0` and waits until it prints its URL. */
export function serve(appDir: string, env: NodeJS.ProcessEnv = {}): Promise<TestServer> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [CLI, 'serve', appDir, '--port', '0'], { env: { ...process.env, SVC_LOG_LEVEL: 'info', ...env } });
    let out = '';
    let err = '';
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /serving \S+ at (http:\/\/\S+)\n/.exec(out); // the whole line: a read may end mid-URL
      if (m)
        ok({
          url: m[1],
          child,
          output: () => out.slice(0, out.lastIndexOf('\n') + 1),
          close: () => {
            child.kill('SIGTERM');
            return exited;
          },
        });
    });
    exited.then((code) => fail(new Error(`svc serve exited (${code}) before serving: ${err || out}`)));
  });
}

export interface PreparedApp {
  dir: string;
  env: NodeJS.ProcessEnv;
  cleanup(): Promise<void>;
}

/** What `prepareApp` copies of an app folder: everything but generated output, data and packages. */
const copyFilter = (p: string) => !/[/\\](\.svc|data|node_modules)$/.test(p);

/** A digest of every file of the app folder `source` but its generated output and data (paths and contents). */
function sourceDigest(source: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (!copyFilter(path)) continue;
      if (entry.isDirectory()) walk(path);
      else
        hash
          .update(`${relative(source, path)}\0`)
          .update(readFileSync(path))
          .update('\0');
    }
  };
  walk(source);
  return hash.digest('hex').slice(0, 24);
}

/** Generations of this process under way, by cache folder: a second request for the same one waits for it. */
const generating = new Map<string, Promise<void>>();

/** Copies the generated output (`.svc/`, `migrations/`) of app folder `from` to `to`. */
function copyGenerated(from: string, to: string): void {
  for (const part of ['.svc', 'migrations'])
    if (existsSync(join(from, part))) cpSync(join(from, part), join(to, part), { recursive: true, verbatimSymlinks: true });
}

/**
 * Runs `svc generate` in `dir`, or copies its output (`.svc/`, `migrations/`) from the run's cache
 * (`SVC_TEST_GENERATE_CACHE`, a folder `global-setup.ts` makes for one `npm test`) when the same
 * app folder was generated for the same backend before in this run. The generated output holds no
 * absolute path of its app folder nor any database URL, so a copy is what `svc generate` would write;
 * `svc serve` then applies the migrations to the copy's own fresh database. Concurrent tests of one
 * file that prepare the same app wait for one generation instead of each running their own.
 */
async function generateCached(dir: string, backend: Backend, env: NodeJS.ProcessEnv): Promise<void> {
  const cacheRoot = process.env.SVC_TEST_GENERATE_CACHE;
  const cached = cacheRoot ? join(cacheRoot, `${backend}-${sourceDigest(dir)}`) : undefined;
  // No await between this look-up and `generating.set` below unless one is under way: the check and the claim are one step.
  const pending = cached ? generating.get(cached) : undefined;
  if (pending) await pending.catch(() => undefined);
  if (cached && existsSync(cached)) return copyGenerated(cached, dir);
  const run = (async () => {
    const result = await runCli(['generate', dir], env);
    if (result.code !== 0) throw new Error(`svc generate failed: ${result.stderr}`);
    if (!cached) return;
    // Written aside, then renamed: a worker that generates the same source at the same time keeps its own.
    const staging = `${cached}.${randomBytes(4).toString('hex')}`;
    copyGenerated(dir, staging);
    try {
      renameSync(staging, cached);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another worker's copy won the rename
    }
  })();
  if (!cached) return run;
  generating.set(cached, run);
  try {
    await run;
  } finally {
    if (generating.get(cached) === run) generating.delete(cached);
  }
}

/**
 * Copies an app folder to a temp dir, lets `edit` change the copy (e.g. write an `svc.json` setting),
 * points it at a fresh database of `backend`, and generates it (`svc generate`, once per app folder
 * and backend in a run: see `generateCached`). SQLite: a file in the temp dir; PostgreSQL: a new
 * database, dropped by cleanup.
 */
export async function prepareApp(source: string, backend: Backend, edit?: (dir: string) => void): Promise<PreparedApp> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-app-'));
  cpSync(source, dir, { recursive: true, filter: copyFilter });
  edit?.(dir);
  const pgdb = backend === 'postgresql' ? await createPgDatabase() : undefined;
  const env = { DATABASE_URL: pgdb ? pgdb.url : `file:${join(dir, 'data', 'app.db')}` };
  await generateCached(dir, backend, env);
  return {
    dir,
    env,
    cleanup: async () => {
      await pgdb?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Adds the loopback addresses to svc.json `trustedProxies` of the app folder `dir` (a `prepareApp`
 * edit): the test process is then a trusted proxy, so the `x-request-id` it sends is the request's id
 * (without a trusted proxy svc makes its own, runtime/logs/request-log.ts `requestIdOf`).
 */
export function trustLoopback(dir: string): void {
  const file = join(dir, 'svc.json');
  const svc = JSON.parse(readFileSync(file, 'utf8')) as { trustedProxies?: string[] };
  svc.trustedProxies = [...(svc.trustedProxies ?? []), '127.0.0.1', '::1'];
  writeFileSync(file, JSON.stringify(svc, null, 2));
}
