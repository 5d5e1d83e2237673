/**
 * @module A private `redis-server` for tests that must stop or restart Redis (never the shared one on
 * 6379): started on a free port, answered PING before `start()` resolves, killed by `stop()`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { freePort, portTaken } from './pg-cluster.js';
import { StopWaiting, waitFor } from './wait.js';

const REDIS_BIN = execFileSync('sh', ['-c', 'command -v redis-server']).toString().trim();

export class PrivateRedis {
  private child?: ChildProcess;
  /** Whether it ever answered: until then the port is ours to choose again. */
  private started = false;

  private constructor(private currentPort: number) {}

  /** A server on a free port (not started yet). */
  static async onFreePort(): Promise<PrivateRedis> {
    return new PrivateRedis(await freePort());
  }

  /** Its port: the one of `onFreePort`, or another free one when that was taken before the first start. */
  get port(): number {
    return this.currentPort;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Starts it (again, on the same port) and waits until it answers. The port `freePort` gave may be
   * taken by another process before the first start binds it: that start moves to another free port
   * (read `url` after `start()`). A restart keeps its port (the servers under test know it).
   * @throws when redis-server exits before answering
   */
  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.startOnce();
        this.started = true;
        return;
      } catch (err) {
        if (this.started || attempt === 3 || !portTaken((err as Error).message)) throw err;
        this.currentPort = await freePort();
      }
    }
  }

  private async startOnce(): Promise<void> {
    const child = spawn(REDIS_BIN, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    let closed = false; // exited, and all it printed read
    child.on('close', () => (closed = true));
    await waitFor(() => {
      if (closed) throw new StopWaiting(`redis-server on port ${this.port} exited (${child.exitCode ?? child.signalCode}): ${out.slice(-2000)}`);
      try {
        // Its own answer: another file's server that took the port first answers too, with its process id.
        const info = execFileSync('redis-cli', ['-p', String(this.port), 'info', 'server'], { stdio: 'pipe', timeout: 2000 }).toString();
        return new RegExp(`^process_id:${child.pid}\\r?$`, 'm').test(info);
      } catch {
        return false;
      }
    }, 10_000);
  }

  /** Kills it (SIGKILL: what a crash looks like) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((ok) => child.once('exit', ok));
    child.kill('SIGKILL');
    await exited;
  }
}
