/**
 * @module The generator's public entry: `generate(options)` (DESIGN §2, STYLE §6). When the app's inputs
 * and the generated output are as the last run left them (`fingerprint.ts`), it answers from that run
 * without loading anything else; otherwise it runs every step (`pipeline.ts`).
 */
import { resolve } from 'node:path';
import { previousRun, recordRun } from './fingerprint.js';
import type { GenerateOptions, GenerateResult } from './generate-types.js';

export { migrationsDir, migrationSql, type DiffDatamodels } from './migrate/plan-migration.js';
export { DefinitionError, formatDiagnostic, type Diagnostic } from './validate/diagnostics.js';
export { initApp } from './init-app.js';
export type { FilterProblem, GenerateOptions, GenerateResult } from './generate-types.js';

/**
 * `svc generate`: validates every definition and emits `<appDir>/.svc/` and, when the model changed,
 * a new migration in `<appDir>/migrations/<provider>/`. When neither the app's files, the migrations,
 * `.svc/`, the environment's database and Redis URLs, the options nor svc itself changed since the last
 * successful run, it answers that run's result (`unchanged: true`) in milliseconds.
 * @throws DefinitionError listing every problem (nothing is written then); the filters of every
 *   definition that is valid on its own are checked in the same run, and the migration's risks to
 *   stored rows once the definitions are valid
 *   (`DEF_REQUIRED_WITHOUT_DEFAULT`, and `DEF_DATA_LOSS` unless `acceptDataLoss`)
 * @throws Error when Prisma client generation (when asked) or the migration diff fails
 * Source: DESIGN §3a (`svc generate`), §5 (migrations).
 */
export async function generate(options: GenerateOptions): Promise<GenerateResult> {
  const appDir = resolve(options.appDir);
  const env = options.env ?? process.env;
  const previous = previousRun(appDir, env, options);
  if (previous.result) return previous.result;
  const { runGenerate } = await import('./pipeline.js');
  const result = await runGenerate(options);
  recordRun(appDir, previous.inputs, result);
  return result;
}

/**
 * `svc dev`'s quick path for an edit of function code only: compiles `functions/**` into
 * `.svc/functions/` without the rest of `generate` (see function-code.ts).
 * @returns the files written, relative to `.svc/`
 * @throws DefinitionError with the code's problems (nothing is written then)
 * Source: DESIGN §10.
 */
export async function emitFunctionCode(appDir: string): Promise<string[]> {
  return (await import('./function-code.js')).emitFunctionCode(appDir);
}

/**
 * `svc dev`: loads the generator's steps and reads the app's function code types in the background,
 * so the first edit after a start that needed no generation is served as fast as later ones (the
 * TypeScript compiler is the slow part). Problems are ignored here: the first reload reports them.
 * Source: DESIGN §10.
 */
export async function warmGenerator(appDir: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await import('./pipeline.js');
  const { loadAndValidate } = await import('./validate/index.js');
  await loadAndValidate(resolve(appDir), env).catch(() => undefined);
}
