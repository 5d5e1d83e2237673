/**
 * Child processes and cleanup for bench/run.mjs: the servers it starts, the `svc` commands it runs,
 * and the cleanup steps (kill servers, drop the database, remove the temp dir) that run once, also
 * on failure or Ctrl-C.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');
export const CLI = join(ROOT, 'dist/cli/index.js');
export const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

const children = new Set();
const cleanups = [];
const stoppers = [];
let cleaning;

/** Registers `fn` (sync or async) to run on cleanup, after the servers are stopped, last first. */
export const onCleanup = (fn) => cleanups.push(fn);
/** Registers `fn` to run first on cleanup (e.g. stop the load generator under way). */
export const onStop = (fn) => stoppers.push(fn);
/** True once cleanup has begun (a server exiting then is expected). */
export const isCleaning = () => cleaning !== undefined;

/** Stops load, kills every server, then runs the cleanup steps; idempotent, resolves when done. */
export function cleanup() {
  cleaning ??= (async () => {
    for (const fn of stoppers) fn();
    for (const child of children) await stopChild(child);
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        log(`cleanup failed: ${err.message}`);
      }
    }
  })();
  return cleaning;
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return Promise.resolve();
  }
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      children.delete(child);
      done();
    });
    child.kill('SIGTERM');
  });
}

// Last resort (synchronous): never leave a server running after this process is gone.
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

/** Runs `svc <args>` to completion; throws with its output when it fails. */
export function runCli(args, env) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc ${args[0]} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/**
 * Spawns a server (`node <args>`) and resolves to `{ name, url, pid, child }` once its stdout matches
 * `pattern` (group 1 = the base URL, `http://127.0.0.1:<port>/api`); rejects after 60 s or on exit.
 */
export function startServer(name, args, env, pattern) {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    let ready = false;
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 60 s: ${err || out}`)), 60_000);
    child.stderr.on('data', (d) => {
      err += d;
      if (ready) process.stderr.write(String(d).replace(/^(?=.)/gm, `[${name}] `));
    });
    child.stdout.on('data', (d) => {
      if (ready) return;
      out += d;
      const m = pattern.exec(out);
      if (m) {
        ready = true;
        clearTimeout(timer);
        ok({ name, url: m[1], pid: child.pid, child });
      }
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(e);
    });
    child.on('exit', (code, signal) => {
      children.delete(child);
      clearTimeout(timer);
      if (!ready) fail(new Error(`${name} exited (${code ?? signal}) before serving: ${err || out}`));
      else if (!isCleaning()) log(`${name} exited unexpectedly (${code ?? signal})`);
    });
  });
}
