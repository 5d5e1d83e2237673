/**
 * @module A private `redis-server` for tests that must stop or restart Redis (never the shared one on
 * 6379): started on a free port, answered PING before `start()` resolves, killed by `stop()`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './pg-cluster.js';
import { waitFor } from './wait.js';

const REDIS_BIN = execFileSync('sh', ['-c', 'command -v redis-server']).toString().trim();

export class PrivateRedis {
  private child?: ChildProcess;

  private constructor(readonly port: number) {}

  /** A server on a free port (not started yet). */
  static async onFreePort(): Promise<PrivateRedis> {
    return new PrivateRedis(await freePort());
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again, on the same port) and waits until it answers. */
  async start(): Promise<void> {
    this.child = spawn(REDIS_BIN, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitFor(() => {
      try {
        execFileSync('redis-cli', ['-p', String(this.port), 'ping'], { stdio: 'pipe' });
        return true;
      } catch {
        return false;
      }
    }, 10_000);
  }

  /** Kills it (SIGKILL: what a crash looks like) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((ok) => child.once('exit', ok));
    child.kill('SIGKILL');
    await exited;
  }
}
