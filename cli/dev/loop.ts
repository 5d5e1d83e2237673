/**
 * @module `svc dev` (DESIGN §10): generate, migrate and serve, then watch the app folder and serve each
 * edit. The generator writes `.svc/`, the runtime's dev server reloads from it (they meet only at the
 * generated output, DESIGN §2). One reload runs at a time; edits made meanwhile wait and are taken
 * together. Per batch of changed paths (changes.ts):
 * - definitions or svc.json: `generate` (migration `<stamp>_dev` when the model changed), then the
 *   server applies it and swaps the new version in; problems are printed (file and JSON path) and the
 *   last good version keeps serving; drops of data follow data-loss.ts;
 * - function code only: the code is compiled and the function workers replaced, nothing else (the code
 *   types that `openapi.json` shows for functions follow with the next definition edit, or the next
 *   `svc generate`, whose fingerprint sees the changed code);
 * - `public/`: answered from disk at once (`no-cache`); `mcp/`: read by each new agent session.
 * A `_dev` migration that fails when applied is rolled back and dropped (folder and failed record, as
 * `svc migrate --discard` does), so undoing the edit recovers without manual steps; one found failing at
 * start is dropped with the `_dev` migrations written after it, and generation runs again (issue 31 §4).
 * Nothing an edit does stops the process; SIGTERM/SIGINT drain and exit as `svc serve` does.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { DefinitionError, emitFunctionCode, formatDiagnostic, generate, warmGenerator, type Diagnostic } from '../../generator/index.js';
import { diffDatamodels, discardMigrationInApp, filterProblems, ruleBreakers, startDevServer, uniqueClashes, type DevServer } from '../../runtime/index.js';
import { describePaths, kindOf, reloadLine } from './changes.js';
import { judgeDataLoss } from './data-loss.js';
import { watchApp } from './watch.js';
import { exitOnStop } from '../stop.js';
import { servingBanner } from '../banner.js';

export interface DevOptions {
  appDir: string;
  port?: number;
  host?: string;
  /** Apply migrations that drop data without asking (a SQLite file is backed up first). */
  acceptDataLoss: boolean;
}

const out = (text: string) => process.stdout.write(text);
const err = (text: string) => process.stderr.write(text);
const oneLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

/** The `_dev` migration a migration error names as failed (`migration <name> failed and was rolled back …`), if any. */
const failedDevMigration = (e: unknown): string | undefined => /^migration (\S+_dev) failed and was rolled back/.exec(oneLine(e))?.[1];

/**
 * Drops the `_dev` migration `name` that failed, and before it the `_dev` migrations written after it
 * (newest first), as `svc migrate --discard` does.
 * @returns the names dropped, newest first
 * @throws the discard's error (an applied migration, a migration not written by svc dev after it)
 */
async function dropFailedDev(appDir: string, name: string): Promise<string[]> {
  const { provider } = JSON.parse(readFileSync(join(appDir, '.svc', 'manifest.json'), 'utf8')) as { provider: string };
  const dir = join(appDir, 'migrations', provider);
  const later = readdirSync(dir)
    .filter((n) => n > name && n.endsWith('_dev'))
    .sort()
    .reverse();
  for (const n of [...later, name]) await discardMigrationInApp(appDir, n);
  return [...later, name];
}

/**
 * Runs `svc dev` until SIGTERM/SIGINT.
 * @throws DefinitionError when the app has problems at start and no earlier `.svc/` to serve; the
 *   errors of `startDevServer`
 */
export async function runDev(options: DevOptions): Promise<DevServer> {
  const appDir = resolve(options.appDir);
  // Migrations are named `<stamp>_dev`, but an app's first one stays `<stamp>_init`.
  const regenerate = (acceptDataLoss: boolean) =>
    generate({
      appDir,
      migrationName: existsSync(join(appDir, 'migrations')) ? 'dev' : undefined,
      acceptDataLoss,
      diffDatamodels,
      checkFilters: (m) => filterProblems(m),
      findUniqueClashes: uniqueClashes,
      findRuleBreakers: ruleBreakers,
    });
  out("svc dev: for one developer's machine (it watches the app folder and swaps each edit in); run svc serve anywhere else\n");
  let startedBroken = false;
  try {
    await regenerate(false);
  } catch (e) {
    // Problems at start (or drops to judge): serve the last good `.svc/` if there is one; the first
    // reload prints the problems, or judges the drops with the server at hand.
    if (!(e instanceof DefinitionError) || !existsSync(join(appDir, '.svc', 'manifest.json'))) throw e;
    startedBroken = true;
  }
  let server: DevServer;
  try {
    server = await startDevServer({ appDir, port: options.port, host: options.host });
  } catch (e) {
    // A `_dev` migration left failing (by an older svc, or an edit the checks could not judge): drop it
    // and the ones queued behind it, then generate again from the last migration that applied.
    const failed = failedDevMigration(e);
    if (!failed) throw e;
    const dropped = await dropFailedDev(appDir, failed).catch(() => {
      throw e;
    });
    err(`svc dev: ${oneLine(e)}\nsvc dev: dropped ${dropped.join(', ')} (svc migrate --discard); generating again\n`);
    try {
      await regenerate(false);
    } catch (again) {
      if (!(again instanceof DefinitionError) || !existsSync(join(appDir, '.svc', 'manifest.json'))) throw again;
      startedBroken = true;
    }
    server = await startDevServer({ appDir, port: options.port, host: options.host });
  }
  out(servingBanner(server));
  void warmGenerator(appDir).catch(() => undefined);

  const report = (paths: string[], diagnostics: Diagnostic[], startedAt: number, reason?: string) => {
    if (!reason) for (const d of diagnostics) err(`${formatDiagnostic(d)}\n`);
    server.problems = diagnostics.map((d) => ({ file: d.file, path: d.path, code: d.code, message: d.message }));
    const n = diagnostics.length;
    err(reloadLine(paths, `${reason ?? `${n} ${n === 1 ? 'problem' : 'problems'}`}; still serving the last good version`, startedAt));
  };

  /** A definition edit (or the code types after function edits): generate, migrate, swap. */
  const reloadApp = async (paths: string[], startedAt: number) => {
    let result;
    let backup: string | null = null;
    try {
      // Drops are always judged here (and backed up), even with --accept-data-loss.
      result = await regenerate(false);
    } catch (e) {
      if (!(e instanceof DefinitionError)) throw e;
      const drops = e.diagnostics.filter((d) => d.code === 'DEF_DATA_LOSS');
      if (drops.length === 0 || drops.length < e.diagnostics.length) return report(paths, e.diagnostics, startedAt);
      const verdict = await judgeDataLoss({ appDir, server, drops, acceptDataLoss: options.acceptDataLoss, print: err, format: formatDiagnostic });
      if (!verdict.go) return report(paths, drops, startedAt, `refused: ${verdict.reason}`);
      backup = verdict.backup;
      result = await regenerate(true);
    }
    for (const w of result.warnings) err(`svc: warning: ${formatDiagnostic(w)}\n`);
    if (result.unchanged && server.problems.length === 0) return out(reloadLine(paths, 'nothing to serve anew', startedAt));
    let done;
    try {
      done = await server.reload();
    } catch (e) {
      const failed = result.migration && failedDevMigration(e) === result.migration ? result.migration : undefined;
      if (!failed) throw e;
      // The edit's own migration failed and was rolled back: drop it, so undoing the edit needs nothing else.
      await dropFailedDev(appDir, failed);
      const message = `${oneLine(e)}; svc dev dropped it: undo the edit, or fix the stored rows and save again`;
      return report(paths, [{ code: 'DEV_MIGRATION_FAILED', file: `migrations/${result.manifest.provider}/${failed}`, path: '', message }], startedAt);
    }
    if (result.unchanged || result.written.some((f) => f.startsWith('functions/'))) server.reloadFunctions();
    server.problems = [];
    const steps = [
      backup ? `database backed up to ${relative(appDir, backup)}` : '',
      done.applied.length ? `migration ${done.applied.join(', ')} applied` : '',
      'new version swapped in',
      done.schedules ? `schedules now ${done.schedules.length ? done.schedules.join(', ') : 'none'}` : '',
      done.triggers ? `triggers now ${done.triggers.length ? done.triggers.join(', ') : 'none'}` : '',
      done.restart.length ? `restart svc dev to apply svc.json ${done.restart.join(', ')}` : '',
    ];
    out(reloadLine(paths, steps.filter(Boolean).join(', '), startedAt));
  };

  /** Function code only: compile it and replace the workers. */
  const reloadFunctions = async (paths: string[], startedAt: number) => {
    let written: string[];
    try {
      written = await emitFunctionCode(appDir);
    } catch (e) {
      if (!(e instanceof DefinitionError)) throw e;
      return report(paths, e.diagnostics, startedAt);
    }
    server.reloadFunctions(written);
    out(reloadLine(paths, `function workers reloaded (${written.length} ${written.length === 1 ? 'file' : 'files'} compiled)`, startedAt));
  };

  const handle = async (paths: string[]) => {
    const startedAt = performance.now();
    const kind = kindOf(paths);
    if (kind === 'public') return out(reloadLine(paths, server.reloadPublic() ? 'public/ served by a new version' : 'served as saved (no-cache)', startedAt));
    if (kind === 'mcp') return out(reloadLine(paths, 'agent sessions started from now on use it', startedAt));
    // With problems outstanding, every edit goes through the whole check, so the problems stay current.
    if (kind === 'functions' && server.problems.length === 0) return reloadFunctions(paths, startedAt);
    return reloadApp(paths, startedAt);
  };

  // The queue: one reload at a time; paths changed meanwhile are taken together next.
  const waiting = new Set<string>();
  let running = false;
  const drain = async () => {
    running = true;
    while (waiting.size > 0) {
      const paths = [...waiting].sort();
      waiting.clear();
      try {
        await handle(paths);
      } catch (e) {
        server.problems = [{ file: '', path: '', code: 'DEV_RELOAD_FAILED', message: oneLine(e) }];
        err(`svc dev: ${describePaths(paths)} changed: ${oneLine(e)}; still serving the last good version\n`);
      }
    }
    running = false;
  };
  const submit = (paths: string[]) => {
    for (const p of paths) waiting.add(p);
    if (!running) void drain();
  };

  const watcher = watchApp(appDir, (paths) => submit(paths));
  if (startedBroken) submit(['svc.json']);
  exitOnStop(() => {
    watcher.close();
    return server.close();
  });
  return server;
}
