/**
 * @module `svc dev`'s rule for a migration that drops a table or column (DESIGN §10), on top of `svc
 * generate`'s (`DEF_DATA_LOSS`, `--accept-data-loss`): a drop of something that holds no data goes
 * ahead; one that holds data is asked about on a terminal (`y/N`) and refused elsewhere unless
 * `--accept-data-loss`. Before an accepted drop, a SQLite database file is copied to
 * `.svc/backups/<stamp>.db`.
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { Diagnostic } from '../../generator/index.js';
import type { DevServer } from '../../runtime/index.js';

/** What to do about the drops of one edit. */
export type DataLossVerdict = { go: true; backup: string | null } | { go: false; reason: string };

/** Asks a yes/no question on the terminal; anything but `y`/`yes` is no. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

const stamp = () => new Date().toISOString().replace(/[-:T]/g, '').replace(/\..*$/, '');

/**
 * Decides about the drops of one edit and, when it goes ahead, backs the SQLite file up first.
 * @param drops - the `DEF_DATA_LOSS` diagnostics `generate` refused the edit with
 * @param print - writes the diagnostics shown before the question
 */
export async function judgeDataLoss(options: {
  appDir: string;
  server: DevServer;
  drops: Diagnostic[];
  acceptDataLoss: boolean;
  print(line: string): void;
  format(d: Diagnostic): string;
}): Promise<DataLossVerdict> {
  const { server, drops } = options;
  const holding = await server.holdsData(drops);
  const losing = drops.filter((_, i) => holding[i]);
  if (losing.length > 0 && !options.acceptDataLoss) {
    // Without `svc generate`'s own hint: the verdict below says what to do in `svc dev`.
    for (const d of losing) options.print(`${options.format({ ...d, message: d.message.replace(/; run svc generate --accept-data-loss.*$/, '') })}\n`);
    const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true;
    if (
      !interactive ||
      !(await confirm(`svc dev: this edit drops data (${losing.length} ${losing.length === 1 ? 'column or table' : 'columns or tables'}); apply it? y/N `))
    ) {
      return {
        go: false,
        reason: interactive ? 'not confirmed' : 'it drops data: undo the edit, or restart with svc dev --accept-data-loss (the SQLite file is backed up first)',
      };
    }
  }
  if (losing.length === 0) return { go: true, backup: null };
  const backup = join(options.appDir, '.svc', 'backups', `${stamp()}.db`);
  return { go: true, backup: (await server.backupDatabase(backup)) ? backup : null };
}
