/**
 * @module HAProxy in front of several `svc serve` processes (issue 24 §3, docs/deploy.md): finds
 * Debian's `haproxy` (installing the package when it is missing and this process may: root with
 * apt-get, as chromium.ts does for the browser), writes the configuration docs/deploy.md documents
 * (HTTP mode, round robin, no stickiness, health checks on `/api/_ready`, WebSocket tunnel timeout) on
 * free loopback ports, and runs it in the foreground as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOrInstall, type FindProgramOptions } from './debian-package.js';
import { freePort, portTaken } from './pg-cluster.js';
import { StopWaiting, waitFor } from './wait.js';
// The one configuration, shared with bench/load-balancer.mjs and quoted in docs/deploy.md.
import { HAPROXY_PROGRAM, haproxyConfig } from '../../bench/haproxy.mjs';

/** Where Debian's `haproxy` package puts the binary. */
export const DEBIAN_HAPROXY = HAPROXY_PROGRAM.debianPath;

/** Options of `findHaproxy`: candidates default to env `SVC_TEST_HAPROXY`, then `/usr/sbin/haproxy`; `haproxy` is searched on `path`. */
export type FindHaproxyOptions = FindProgramOptions;

/**
 * Finds HAProxy, installing Debian's package when allowed (see `FindProgramOptions`), as chromium.ts
 * does for the browser.
 * @returns the binary's path, or undefined when none is found and none could be installed (each step
 *   and why it failed is logged, with what to install)
 */
export function findHaproxy(options: FindHaproxyOptions = {}): string | undefined {
  return findOrInstall(
    {
      ...HAPROXY_PROGRAM,
      withoutIt: 'the load-balancer test will fail',
    },
    options,
  );
}

/** A running HAProxy (its own child process, foreground), with its admin socket. */
export class HaproxyProcess {
  private constructor(
    readonly url: string,
    readonly child: ChildProcess,
    private readonly dir: string,
    private readonly output: () => string,
  ) {}

  /**
   * Starts HAProxy on a free loopback port in front of `upstreams` and waits until every upstream's
   * health check passes (each is UP).
   * @param tlsPem - a PEM file with certificate and key: HAProxy terminates TLS (and sets `X-Forwarded-Proto`, `X-Forwarded-Host`)
   * @param port - the frontend's loopback port; default a free one
   * @returns its `http://127.0.0.1:<port>` (`https://` with `tlsPem`; without `/api`)
   * @throws when HAProxy is missing, rejects the configuration, or an upstream stays down 20 s
   */
  static async start(upstreams: Upstream[], maxconn?: number, tlsPem?: string, port?: number): Promise<HaproxyProcess> {
    const bin = findHaproxy();
    if (!bin) throw new Error('HAProxy is not installed: apt-get install -y haproxy');
    // The port of `freePort` may be taken before HAProxy binds it: then it starts again on another
    // (a port the caller chose is tried once).
    for (let attempt = 1; ; attempt++) {
      const dir = mkdtempSync(join(tmpdir(), 'svc-haproxy-'));
      try {
        return await HaproxyProcess.startOn(bin, dir, port ?? (await freePort()), upstreams, maxconn, tlsPem);
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        if (attempt === 3 || port !== undefined || !portTaken((err as Error).message)) throw err;
      }
    }
  }

  private static async startOn(bin: string, dir: string, port: number, upstreams: Upstream[], maxconn?: number, tlsPem?: string): Promise<HaproxyProcess> {
    const config = join(dir, 'haproxy.cfg');
    writeFileSync(config, haproxyConfig(`127.0.0.1:${port}`, upstreams, join(dir, 'admin.sock'), maxconn, tlsPem));
    const child = spawn(bin, ['-db', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    let closed = false; // exited, and all it printed read
    child.on('close', () => (closed = true));
    const proxy = new HaproxyProcess(`${tlsPem ? 'https' : 'http'}://127.0.0.1:${port}`, child, dir, () => out);
    let states: Record<string, string> = {};
    try {
      await waitFor(async () => {
        if (closed) throw new StopWaiting(`haproxy exited (${child.exitCode ?? child.signalCode}): ${out}`);
        states = await proxy.serverStates().catch(() => ({}) as Record<string, string>);
        return upstreams.every((u) => states[u.name] === 'UP');
      }, 20_000);
    } catch (err) {
      if (!closed) await proxy.stop();
      if (err instanceof StopWaiting) throw err;
      throw new Error(`${(err as Error).message}: upstream states ${JSON.stringify(states)}; haproxy said: ${out}`);
    }
    return proxy;
  }

  /** Runs one command on the admin socket (e.g. `show stat`) and resolves to its answer. */
  command(line: string): Promise<string> {
    return new Promise((ok, fail) => {
      const socket = connect(join(this.dir, 'admin.sock'));
      let answer = '';
      socket.on('data', (d) => (answer += d));
      socket.on('error', fail);
      socket.on('end', () => ok(answer));
      socket.write(`${line}\n`);
    });
  }

  /** Each server's state from `show stat` (`UP`, `DOWN`, `UP 1/2`, `MAINT`, …), by server name. */
  async serverStates(): Promise<Record<string, string>> {
    const csv = await this.command('show stat');
    const states: Record<string, string> = {};
    for (const row of csv.split('\n').slice(1)) {
      const cells = row.split(',');
      if (cells[0] === 'svc' && cells[1] !== 'BACKEND' && cells[1] !== 'FRONTEND' && cells[1]) states[cells[1]] = cells[17];
    }
    return states;
  }

  /** HAProxy's own output (startup warnings; request logs go nowhere: no log target is set). */
  log(): string {
    return this.output();
  }

  /** Stops it (SIGTERM, then waits for the exit) and removes its folder. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((ok) => this.child.once('exit', ok));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
