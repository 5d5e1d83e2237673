/**
 * @module `/api/_admin/jobs` (DESIGN §12, docs/jobs.md "Managing jobs"): trigger, schedule and code jobs
 * for admins, as `svc jobs` shows them. `GET /jobs?state=pending|running|failed&task=&limit=` answers
 * `{ data: JobRecord[], stats: JobStats }` (newest first, at most 1000); `GET /jobs/:id` one job;
 * `POST /jobs/:id/retry` makes a job that is not running due now (a failed one with its attempts reset);
 * `POST /jobs/retry-failed` does so for every failed job (`{ retried }`); `DELETE /jobs/:id` discards a
 * pending or failed job. 404 for an unknown id, 409 for a running job, 503 where no engine runs.
 */
import { Router, type Request, type Response } from 'express';
import { HttpError } from '../../errors.js';
import { JOB_TASKS, type JobEngine, type JobState } from '../../jobs/engine.js';
import { enumParam, idParam, intParam, requireAdmin } from './params.js';

const STATES: readonly JobState[] = ['pending', 'running', 'failed'];

/** The router of the jobs admin endpoints; `engine` absent: every route answers 503. */
export function jobsAdminRouter(engine: JobEngine | undefined): Router {
  const router = Router();
  const need = (res: Response): JobEngine => {
    requireAdmin(res);
    if (!engine) throw new HttpError('SERVICE_UNAVAILABLE', 'jobs are not available on this database yet');
    return engine;
  };
  const one = async (e: JobEngine, raw: unknown) => {
    const id = idParam(raw);
    const job = id === null ? null : await e.get(id);
    if (!job) throw new HttpError('NOT_FOUND', `no job has the id ${JSON.stringify(String(raw).slice(0, 200))}`);
    return job;
  };

  router.get('/jobs', async (req: Request, res: Response) => {
    const e = need(res);
    const query = req.query as Record<string, unknown>;
    const state = enumParam(query, 'state', STATES);
    const task = enumParam(query, 'task', JOB_TASKS);
    const limit = intParam(query, 'limit', 1, 1000) ?? 100;
    const [data, stats] = await Promise.all([e.list({ state, task, limit }), e.stats()]);
    res.json({ data, stats });
  });

  router.post('/jobs/retry-failed', async (_req: Request, res: Response) => {
    const e = need(res);
    res.json({ retried: await e.retry({ failed: true }) });
  });

  router.get('/jobs/:id', async (req: Request, res: Response) => {
    const e = need(res);
    res.json(await one(e, req.params.id));
  });

  router.post('/jobs/:id/retry', async (req: Request, res: Response) => {
    const e = need(res);
    const job = await one(e, req.params.id);
    if (job.state === 'running') throw new HttpError('CONFLICT', `job ${job.id} is running; it can be retried once it ends`);
    await e.retry({ id: job.id });
    res.json(await e.get(job.id));
  });

  router.delete('/jobs/:id', async (req: Request, res: Response) => {
    const e = need(res);
    const job = await one(e, req.params.id);
    if (job.state === 'running') throw new HttpError('CONFLICT', `job ${job.id} is running; it can be discarded once it ends`);
    if (!(await e.discard(job.id))) throw new HttpError('CONFLICT', `job ${job.id} started running; it can be discarded once it ends`);
    res.status(204).end();
  });

  return router;
}
