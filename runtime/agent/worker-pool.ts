/**
 * @module The agent's worker threads (DESIGN §7): a small pool, shared by every session of the
 * server, that runs model turns. A session is state on the main thread; only its running turn lives
 * in a worker (worker.ts, which runs many turns at once, each by its `turnId`). A turn goes to the
 * worker with the fewest turns; workers start on the first turn that needs one. A worker that dies
 * (an uncaught error, `terminate`) fails every turn it was running — those turns may have called
 * tools already, so they are never retried — and the next turn starts a replacement.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { FromSessionWorker, ToSessionWorker, TurnRequest } from './worker-protocol.js';

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** The pool size when svc.json `agent.workers` is not set: the cores, at least 1 and at most 4. */
export function defaultWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/** What the pool tells the session that owns a turn: every worker message of it, and its death. */
export interface TurnListener {
  message(m: FromSessionWorker): void;
  /** The worker running the turn died; `error` is the text the turn fails with. */
  lost(error: string): void;
}

interface PoolWorker {
  worker: Worker;
  turns: Set<string>;
  /** Set once the worker failed or exited: no new turn goes to it. */
  dead: boolean;
}

export class AgentWorkerPool {
  private readonly workers: PoolWorker[] = [];
  private readonly turns = new Map<string, { w: PoolWorker; listener: TurnListener }>();
  private closed = false;

  /**
   * @param size - most worker threads (svc.json `agent.workers`; default `defaultWorkers()`)
   * @param onError - told of a worker's uncaught error (for the server log)
   */
  constructor(
    readonly size: number,
    private readonly onError: (err: Error) => void = () => {},
  ) {}

  /** Workers alive now (started lazily, at most `size`). */
  get running(): number {
    return this.workers.length;
  }

  /**
   * Hands a turn to the least busy worker (starting one when fewer than `size` run and all have turns).
   * @throws Error when the pool is closed
   */
  startTurn(turnId: string, request: TurnRequest, listener: TurnListener): void {
    if (this.closed) throw new Error('the agent worker pool is closed');
    const w = this.pick();
    w.turns.add(turnId);
    this.turns.set(turnId, { w, listener });
    this.post(w, { type: 'turn', turnId, request });
  }

  /** Answers a tool call of a running turn (ignored when the turn has ended). */
  toolResult(turnId: string, callId: string, ok: boolean, output: string): void {
    const t = this.turns.get(turnId);
    if (t) this.post(t.w, { type: 'tool-result', callId, ok, output });
  }

  /** Aborts a running turn in its worker (it then ends with `done`, status `failed`, `cancelled`). */
  cancel(turnId: string): void {
    const t = this.turns.get(turnId);
    if (t) this.post(t.w, { type: 'cancel', turnId });
  }

  /** Forgets a turn its session has ended (restart, stop): later messages of it are dropped. */
  forget(turnId: string): void {
    const t = this.turns.get(turnId);
    if (!t) return;
    this.cancel(turnId);
    t.w.turns.delete(turnId);
    this.turns.delete(turnId);
  }

  /** The worker thread running a turn (tests kill it to check that only its turns fail). */
  workerOf(turnId: string): Worker | undefined {
    return this.turns.get(turnId)?.w.worker;
  }

  /** Stops every worker; running turns fail (`the agent worker pool was closed`). */
  async close(): Promise<void> {
    this.closed = true;
    const all = this.workers.splice(0);
    for (const w of all) this.bury(w, 'the agent worker pool was closed');
    await Promise.all(all.map((w) => w.worker.terminate()));
  }

  private pick(): PoolWorker {
    let best: PoolWorker | undefined;
    for (const w of this.workers) if (!best || w.turns.size < best.turns.size) best = w;
    if (best && (best.turns.size === 0 || this.workers.length >= this.size)) return best;
    return this.spawn();
  }

  private spawn(): PoolWorker {
    const w: PoolWorker = { worker: new Worker(WORKER_URL), turns: new Set(), dead: false };
    this.workers.push(w);
    w.worker.on('message', (m: FromSessionWorker) => {
      const t = this.turns.get(m.turnId);
      if (!t || t.w !== w) return;
      if (m.type === 'done') {
        w.turns.delete(m.turnId);
        this.turns.delete(m.turnId);
      }
      t.listener.message(m);
    });
    w.worker.on('error', (err) => {
      this.onError(err);
      this.bury(w, `the agent worker failed: ${err.message}`);
    });
    w.worker.on('exit', (code) => this.bury(w, `the agent worker stopped (exit code ${code})`));
    return w;
  }

  /** Takes a dead worker out of the pool and fails its turns with `error`. */
  private bury(w: PoolWorker, error: string): void {
    if (w.dead) return;
    w.dead = true;
    const i = this.workers.indexOf(w);
    if (i >= 0) this.workers.splice(i, 1);
    for (const turnId of w.turns) {
      const t = this.turns.get(turnId);
      this.turns.delete(turnId);
      t?.listener.lost(error);
    }
    w.turns.clear();
  }

  private post(w: PoolWorker, m: ToSessionWorker): void {
    w.worker.postMessage(m);
  }
}
