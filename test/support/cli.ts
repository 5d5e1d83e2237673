/**
 * @module Runs the built `svc` CLI (`dist/cli/index.js`) as a real process, and serves apps with it
 * on a free loopback port. Servers are disposable: `close()` sends SIGTERM and waits for the exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
  /** Everything the process printed to stdout so far (pino JSON lines and the banner). */
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
      const m = /serving \S+ at (http:\/\/\S+)/.exec(out);
      if (m)
        ok({
          url: m[1],
          child,
          output: () => out,
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

/**
 * Copies an app folder to a temp dir, points it at a fresh database of `backend`, and runs
 * `svc generate` on it. SQLite: a file in the temp dir; PostgreSQL: a new database, dropped by cleanup.
 */
export async function prepareApp(source: string, backend: Backend): Promise<PreparedApp> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-app-'));
  cpSync(source, dir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
  const pgdb = backend === 'postgresql' ? await createPgDatabase() : undefined;
  const env = { DATABASE_URL: pgdb ? pgdb.url : `file:${join(dir, 'data', 'app.db')}` };
  const result = await runCli(['generate', dir], env);
  if (result.code !== 0) throw new Error(`svc generate failed: ${result.stderr}`);
  return {
    dir,
    env,
    cleanup: async () => {
      await pgdb?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
