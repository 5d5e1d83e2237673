/**
 * The agent's worker pool (runtime/agent/worker-pool.ts, DESIGN §7) with real worker threads and the
 * scripted model on loopback: many turns share one worker, workers start only when the ones running
 * are busy, a failed turn fails only itself, and a worker killed mid-turn fails exactly the turns it
 * ran while the next turn gets a new worker.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentWorkerPool, type TurnListener } from '../../../dist/runtime/agent/worker-pool.js';
import type { FromSessionWorker, TurnRequest } from '../../../dist/runtime/agent/worker-protocol.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';

let model: ModelServer;
let pool: AgentWorkerPool | undefined;

beforeAll(async () => {
  model = await startModelServer();
});
afterAll(() => model.close());
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

function request(text: string): TurnRequest {
  return {
    baseURL: model.url,
    providerName: 'scripted',
    modelId: 'small-1',
    system: 'Be brief.',
    messages: [{ role: 'user', content: text }],
    tools: [],
    maxSteps: 3,
  };
}

interface Outcome {
  status: string;
  error: string | null;
  text: string;
}

/** Starts a turn and returns its outcome (from `done`, or `lost` when its worker dies) and a promise of its first text delta. */
function turn(p: AgentWorkerPool, turnId: string, text: string): { outcome: Promise<Outcome>; firstText: Promise<void> } {
  let seen!: () => void;
  const firstText = new Promise<void>((ok) => (seen = ok));
  const outcome = new Promise<Outcome>((resolve) => {
    let streamed = '';
    const listener: TurnListener = {
      message(m: FromSessionWorker) {
        if (m.type === 'event' && m.event.type === 'text') {
          streamed += String(m.event.delta);
          seen();
        }
        if (m.type === 'done') resolve({ status: m.status, error: m.error, text: streamed });
      },
      lost: (error) => resolve({ status: 'failed', error, text: streamed }),
    };
    p.startTurn(turnId, request(text), listener);
  });
  return { outcome, firstText };
}

describe('agent worker pool', () => {
  it('runs the turns of many sessions at once on one worker', async () => {
    pool = new AgentWorkerPool(1);
    model.script(...Array.from({ length: 20 }, (_, i) => ({ text: [`answer ${i}`], delayMs: 20 })));
    const turns = Array.from({ length: 20 }, (_, i) => turn(pool!, `t${i}`, `q${i}`));
    const outcomes = await Promise.all(turns.map((t) => t.outcome));
    expect(outcomes.every((o) => o.status === 'completed')).toBe(true);
    expect(new Set(outcomes.map((o) => o.text)).size).toBe(20);
    expect(pool.running).toBe(1);
  });

  it('starts a second worker only when the first has a turn, and never more than its size', async () => {
    pool = new AgentWorkerPool(2);
    model.script(...Array.from({ length: 3 }, () => ({ text: ['x'], delayMs: 30 })));
    const a = turn(pool, 'a', 'one');
    const wa = pool.workerOf('a');
    const b = turn(pool, 'b', 'two');
    const c = turn(pool, 'c', 'three');
    expect(pool.workerOf('b')).not.toBe(wa);
    expect(pool.running).toBe(2);
    await Promise.all([a.outcome, b.outcome, c.outcome]);
    expect(pool.workerOf('a')).toBeUndefined();
  });

  it('a failed turn fails only itself; the other turns on its worker complete', async () => {
    pool = new AgentWorkerPool(1);
    model.script({ text: ['fine'], delayMs: 30 }, { status: 400 }, { text: ['also fine'], delayMs: 30 });
    const [a, b, c] = ['a', 'b', 'c'].map((id) => turn(pool!, id, id));
    expect(await b.outcome).toMatchObject({ status: 'failed', error: 'the model provider answered 400' });
    expect((await a.outcome).status).toBe('completed');
    expect((await c.outcome).status).toBe('completed');
  });

  it('a worker killed mid-turn fails the turns it ran, the other worker goes on, the next turn gets a new worker', async () => {
    pool = new AgentWorkerPool(2);
    model.script({ text: ['Working'], hang: true }, { text: ['Other ', 'worker'], delayMs: 150 });
    const doomed = turn(pool, 'doomed', 'crash me');
    await doomed.firstText;
    const other = turn(pool, 'other', 'keep going');
    const killed = pool.workerOf('doomed')!;
    expect(pool.workerOf('other')).not.toBe(killed);
    await killed.terminate();
    expect(await doomed.outcome).toMatchObject({ status: 'failed', error: expect.stringContaining('the agent worker stopped') });
    expect(await other.outcome).toMatchObject({ status: 'completed', text: 'Other worker' });
    model.script({ text: ['Back'] });
    const next = turn(pool, 'next', 'again');
    expect(pool.workerOf('next')).not.toBe(killed);
    expect(await next.outcome).toMatchObject({ status: 'completed', text: 'Back' });
  });

  it('every turn a killed worker was running fails, whichever session it belonged to', async () => {
    pool = new AgentWorkerPool(1);
    model.script({ text: ['One'], hang: true }, { text: ['Two'], hang: true });
    const one = turn(pool, 'one', 'first session');
    await one.firstText;
    const two = turn(pool, 'two', 'second session');
    await two.firstText;
    expect(pool.workerOf('two')).toBe(pool.workerOf('one'));
    await pool.workerOf('one')!.terminate();
    for (const t of [one, two]) expect(await t.outcome).toMatchObject({ status: 'failed', error: expect.stringContaining('the agent worker stopped') });
    expect(pool.running).toBe(0);
  });

  it('refuses turns once closed', async () => {
    pool = new AgentWorkerPool(1);
    await pool.close();
    expect(() => pool!.startTurn('late', request('late'), { message: () => {}, lost: () => {} })).toThrow(/closed/);
  });
});
