/**
 * @module `svc jobs [dir] list|retry|discard` (DESIGN §3a, §12): the app's job engine opened on its
 * database without a runner. Each function applies pending migrations, prepares the engine's storage
 * (idempotent), does one thing and closes the database; the CLI prints the result as JSON.
 */
import { HttpError } from '../errors.js';
import { withAppDatabase } from '../identity-commands.js';
import { databaseUrlFor } from '../server.js';
import type { JobEngine, JobRecord, JobStats } from './engine.js';
import { openJobEngine } from './index.js';

async function withEngine<T>(appDir: string, env: NodeJS.ProcessEnv, fn: (engine: JobEngine) => Promise<T>): Promise<T> {
  return withAppDatabase(appDir, env, async (db, manifest) => {
    const engine = openJobEngine(db, { databaseUrl: databaseUrlFor(appDir, manifest, env) });
    await engine.prepare();
    return fn(engine);
  });
}

async function existing(engine: JobEngine, id: string): Promise<JobRecord> {
  const job = await engine.get(id);
  if (!job) throw new HttpError('NOT_FOUND', `no job has the id ${JSON.stringify(id.slice(0, 200))}`);
  if (job.state === 'running') throw new HttpError('CONFLICT', `job ${job.id} is running; try again once it ends`);
  return job;
}

/** `svc jobs list [--failed]`: up to `limit` jobs (default 100, at most 1000), newest first, with the counts. */
export async function listJobsInApp(
  appDir: string,
  options: { failed?: boolean; limit?: number } = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ data: JobRecord[]; stats: JobStats }> {
  return withEngine(appDir, env, async (engine) => ({
    data: await engine.list({ state: options.failed ? 'failed' : undefined, limit: options.limit }),
    stats: await engine.stats(),
  }));
}

/**
 * `svc jobs retry <id>` / `svc jobs retry --failed`: makes the job (or every failed job) due now with
 * its attempts reset. @returns `{ retried }`, how many. @throws HttpError NOT_FOUND / CONFLICT (running)
 */
export async function retryJobsInApp(
  appDir: string,
  target: { id: string } | { failed: true },
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ retried: number }> {
  return withEngine(appDir, env, async (engine) => {
    if ('id' in target) await existing(engine, target.id);
    return { retried: await engine.retry(target) };
  });
}

/** `svc jobs discard <id>`: removes a pending or failed job. @throws HttpError NOT_FOUND / CONFLICT (running) */
export async function discardJobInApp(appDir: string, id: string, env: NodeJS.ProcessEnv = process.env): Promise<{ id: string; discarded: true }> {
  return withEngine(appDir, env, async (engine) => {
    const job = await existing(engine, id);
    if (!(await engine.discard(job.id))) throw new HttpError('CONFLICT', `job ${job.id} started running; try again once it ends`);
    return { id: job.id, discarded: true };
  });
}
