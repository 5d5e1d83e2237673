/**
 * @module A private, throwaway PostgreSQL cluster for tests that must stop, start or restart a
 * database (the shared server on 5432 is never touched). Made with Debian's postgresql-common tools:
 * `pg_createcluster <ver> svc_drv_<random> -p <port>` with trust authentication for local sockets and
 * 127.0.0.1/::1 (like the shared server), superuser `postgres`. The tests run as root; the tools switch
 * to the `postgres` OS user themselves.
 */
import { execFile } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** A running private cluster. */
export interface PgCluster {
  /** TCP port on 127.0.0.1. */
  port: number;
  /** Cluster name (`svc_drv_<random>`). */
  name: string;
  /** `postgresql://postgres@127.0.0.1:<port>/<db>` (default db: `postgres`). */
  url(db?: string): string;
  /** `pg_ctlcluster … restart -m fast`: every connection gets 57P01, then the server is back. */
  restart(): Promise<void>;
  /** Fast shutdown (connections get 57P01). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops and deletes the cluster (data and configuration). Safe to call twice. */
  remove(): Promise<void>;
}

/** The newest installed PostgreSQL major version (the directory names under /usr/lib/postgresql). */
function pgVersion(): string {
  const versions = readdirSync('/usr/lib/postgresql')
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(a) - Number(b));
  if (!versions.length) throw new Error('no PostgreSQL installation under /usr/lib/postgresql');
  return versions[versions.length - 1];
}

/** A TCP port free on 127.0.0.1 right now. */
function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => ok(port));
    });
  });
}

/** Resolves once the cluster accepts a connection and answers `SELECT 1` (polls every 50 ms, 30 s max). */
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

/** Creates and starts a private cluster on a free port; see the module comment. */
export async function startPgCluster(): Promise<PgCluster> {
  const version = pgVersion();
  const name = `svc_drv_${Math.random().toString(36).slice(2, 10)}`;
  const port = await freePort();
  // fsync off: the cluster is disposable, and tests restart it often.
  await run('pg_createcluster', [version, name, '-p', String(port), '-o', 'fsync=off', '-o', 'synchronous_commit=off', '--start-conf=manual']);
  writeFileSync(`/etc/postgresql/${version}/${name}/pg_hba.conf`, 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n');
  const ctl = (action: string, ...extra: string[]) => run('pg_ctlcluster', [version, name, action, ...extra]);
  const url = (db = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${db}`;
  let removed = false;
  const cluster: PgCluster = {
    port,
    name,
    url,
    restart: async () => {
      await ctl('restart', '-m', 'fast');
    },
    stop: async () => {
      await ctl('stop', '-m', 'fast');
    },
    start: async () => {
      await ctl('start');
    },
    remove: async () => {
      if (removed) return;
      removed = true;
      await run('pg_dropcluster', ['--stop', version, name]);
    },
  };
  try {
    await cluster.start();
    await waitForPg(url());
  } catch (err) {
    await cluster.remove().catch(() => {});
    throw err;
  }
  return cluster;
}
