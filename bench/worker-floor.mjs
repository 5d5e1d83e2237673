/**
 * The floor for a function call (bench/run.mjs, `function` row): a hand-off from the `node:http`
 * handler to a `worker_threads` thread and back, with no code of svc's. A pool shaped like svc's
 * (runtime/functions/worker-pool.ts): at most `max(8, 4 × cores)` threads, one call per thread at a
 * time, later calls queued; the call is a message `{ id, name, input }`, the answer `{ id, value }`.
 * SPEC §4.8's time and memory limits need a thread per running call, so this hop is the least any
 * server with those limits pays per call.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

// The thread: the function's answer, posted back (what `export default async () => ({ pong: true })` does).
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const ping = async () => ({ pong: true });
parentPort.on('message', async (job) => parentPort.postMessage({ id: job.id, value: await ping(job.input) }));
`;

/** A pool of worker threads; `call(name, input)` resolves to the thread's answer. */
export function createWorkerFloor(maxThreads = Number(process.env.MAXT ?? Math.max(8, 4 * availableParallelism()))) {
  const idle = [];
  const queue = [];
  const pending = new Map();
  let threads = 0;
  let nextId = 0;

  function spawn() {
    threads += 1;
    const worker = new Worker(THREAD_SOURCE, { eval: true });
    worker.on('message', (msg) => {
      const done = pending.get(msg.id);
      pending.delete(msg.id);
      done(msg.value);
      release(worker);
    });
    return worker;
  }

  function release(worker) {
    const next = queue.shift();
    if (next) worker.postMessage(next);
    else idle.push(worker);
  }

  function call(name, input) {
    return new Promise((resolve) => {
      const job = { id: nextId++, name, input };
      pending.set(job.id, resolve);
      const worker = idle.pop() ?? (threads < maxThreads ? spawn() : undefined);
      if (worker) worker.postMessage(job);
      else queue.push(job);
    });
  }

  return { call };
}
