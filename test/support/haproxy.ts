/**
 * @module HAProxy in front of several `svc serve` processes (issue 24 §3, docs/deploy.md): finds
 * Debian's `haproxy` (installing the package when it is missing and this process may: root with
 * apt-get, as chromium.ts does for the browser), writes the configuration docs/deploy.md documents
 * (HTTP mode, round robin, no stickiness, health checks on `/api/_ready`, WebSocket tunnel timeout) on
 * free loopback ports, and runs it in the foreground as a child process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './pg-cluster.js';
import { waitFor } from './wait.js';
// The one configuration, shared with bench/load-balancer.mjs and quoted in docs/deploy.md.
import { haproxyConfig } from '../../bench/haproxy.mjs';

/** Where Debian's `haproxy` package puts the binary. */
export const DEBIAN_HAPROXY = '/usr/sbin/haproxy';

const isExecutable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

const onPath = (name: string, path: string): string | undefined =>
  path
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find(isExecutable);

export interface FindHaproxyOptions {
  /** Paths tried first, in order. Default: env `SVC_TEST_HAPROXY` (when set), then `/usr/sbin/haproxy`. */
  candidates?: string[];
  /** Searched for `haproxy` after the candidates. Default: env `PATH`. */
  path?: string;
  /**
   * Install Debian's `haproxy` when nothing is found. Default: when running as root and `apt-get` is on
   * `path`. Runs `apt-get install -y haproxy`, then `apt-get update` and the install again when the
   * first try fails.
   */
  install?: boolean;
  /** The apt-get to run. Default: `apt-get` found on `path`. */
  aptGet?: string;
  /** Where each step is reported (one line each). Default: stdout. */
  log?: (line: string) => void;
}

/**
 * Finds HAProxy, installing Debian's package when allowed (see `FindHaproxyOptions`), as
 * chromium.ts does for the browser.
 * @returns the binary's path, or undefined when none is found and none could be installed (each step
 *   and why it failed is logged, with what to install)
 */
export function findHaproxy(options: FindHaproxyOptions = {}): string | undefined {
  const path = options.path ?? process.env.PATH ?? '';
  const candidates = options.candidates ?? [...(process.env.SVC_TEST_HAPROXY ? [process.env.SVC_TEST_HAPROXY] : []), DEBIAN_HAPROXY];
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const found = candidates.find(isExecutable) ?? onPath('haproxy', path);
  if (found) return found;
  const aptGet = options.aptGet ?? onPath('apt-get', path);
  const install = options.install ?? (process.getuid?.() === 0 && aptGet !== undefined);
  if (!install || !aptGet) {
    log(`svc tests: no HAProxy found (tried ${candidates.join(', ')} and PATH); install Debian's package: apt-get install -y haproxy`);
    return undefined;
  }
  const apt = (...args: string[]) => {
    log(`svc tests: HAProxy is missing; running ${aptGet} ${args.join(' ')}`);
    // Waits up to 5 minutes for another apt/dpkg run to release its lock.
    const r = spawnSync(aptGet, ['-o', 'DPkg::Lock::Timeout=300', ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return r.status === 0;
  };
  if (!apt('install', '-y', 'haproxy') && (!apt('update') || !apt('install', '-y', 'haproxy'))) {
    log('svc tests: installing HAProxy failed; the load-balancer test will fail');
    return undefined;
  }
  const installed = isExecutable(DEBIAN_HAPROXY) ? DEBIAN_HAPROXY : undefined;
  log(installed ? `svc tests: HAProxy installed at ${installed}` : `svc tests: apt-get succeeded but ${DEBIAN_HAPROXY} is missing`);
  return installed;
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
   * @returns its `http://127.0.0.1:<port>` (without `/api`)
   * @throws when HAProxy is missing, rejects the configuration, or an upstream stays down 20 s
   */
  static async start(upstreams: Upstream[], maxconn?: number): Promise<HaproxyProcess> {
    const bin = findHaproxy();
    if (!bin) throw new Error('HAProxy is not installed: apt-get install -y haproxy');
    const dir = mkdtempSync(join(tmpdir(), 'svc-haproxy-'));
    const port = await freePort();
    const config = join(dir, 'haproxy.cfg');
    writeFileSync(config, haproxyConfig(`127.0.0.1:${port}`, upstreams, join(dir, 'admin.sock'), maxconn));
    const child = spawn(bin, ['-db', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const proxy = new HaproxyProcess(`http://127.0.0.1:${port}`, child, dir, () => out);
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}): ${out}`);
      const states = await proxy.serverStates().catch(() => ({}) as Record<string, string>);
      return upstreams.every((u) => states[u.name] === 'UP');
    }, 20_000);
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
