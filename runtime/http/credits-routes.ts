/**
 * @module `GET` and `PATCH /api/_agent/credits` (DESIGN §7 "Admin controls"): the agent's credit state
 * `{ mode, credits, monthlyCap, monthUsed, paused }`, and an admin's change of any of `{ addBalance,
 * monthlyCap, paused }`. Admin service accounts only: anonymous callers get 401, others 403. In the
 * OpenAPI document, never among the agent's tools.
 */
import { Router, type Request, type Response } from 'express';
import { callerOf, type Caller } from '../auth/caller.js';
import { HttpError } from '../errors.js';
import type { CreditLedger } from '../agent/credits.js';

function requireAdmin(caller: Caller): void {
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'the agent credits require an admin service account');
  if (!caller.admin) throw new HttpError('FORBIDDEN', 'only admin service accounts may read or change the agent credits');
}

/** The router; mount it at `/api/_agent` after authentication and a JSON body parser. */
export function creditsRouter(ledger: CreditLedger): Router {
  const router = Router();
  router.get('/credits', async (_req: Request, res: Response) => {
    requireAdmin(callerOf(res));
    res.json(await ledger.state());
  });
  router.patch('/credits', async (req: Request, res: Response) => {
    requireAdmin(callerOf(res));
    res.json(await ledger.change(req.body));
  });
  router.all('/credits', (req) => {
    throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on /api/_agent/credits (GET, PATCH)`);
  });
  return router;
}
