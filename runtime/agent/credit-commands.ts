/**
 * @module `svc credits [dir] [--add N] [--cap N|none] [--resume]` (DESIGN §3a, §7): shows or changes
 * the agent credit state in the app's database and prints it, the same object as
 * `GET /api/_agent/credits`. Running servers read the new state at their next turn.
 */
import { withAppDatabase } from '../identity-commands.js';
import { CreditLedger, type CreditChange, type CreditState } from './credits.js';

/**
 * Applies `change` (when it has any field) and answers the state.
 * @throws HttpError INVALID_PARAMETER (400) for a bad value; StartupError (no `.svc/`, wrong database URL)
 */
export async function creditsInApp(appDir: string, change: CreditChange, env: NodeJS.ProcessEnv = process.env): Promise<CreditState> {
  return withAppDatabase(appDir, env, async (db, manifest) => {
    const ledger = new CreditLedger(db, manifest.settings.credits);
    return Object.keys(change).length > 0 ? ledger.change(change) : ledger.state();
  });
}
