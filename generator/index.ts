/**
 * @module The generator's public entry: `generate(options)` (DESIGN §2, STYLE §6). When the app's inputs
 * and the generated output are as the last run left them (`fingerprint.ts`), it answers from that run
 * without loading anything else; otherwise it runs every step (`pipeline.ts`).
 */
import { resolve } from 'node:path';
import type { AppManifest } from '../runtime/index.js';
import { previousRun, recordRun } from './fingerprint.js';
import type { DiffDatamodels } from './migrate/plan-migration.js';
import type { Diagnostic } from './validate/diagnostics.js';

export { migrationsDir, type DiffDatamodels } from './migrate/plan-migration.js';
export { DefinitionError, formatDiagnostic, type Diagnostic } from './validate/diagnostics.js';
export { initApp } from './init-app.js';

export interface GenerateOptions {
  /** The app folder. */
  appDir: string;
  /** Environment for `DATABASE_URL` / `REDIS_URL` overrides; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Name of the migration written when the model changed (`svc generate --name`). */
  migrationName?: string;
  /** Computes migration SQL (the runtime's schema engine; injected so the generator never imports the runtime). */
  diffDatamodels: DiffDatamodels;
  /**
   * Checks the filters of views, queries and policies against the model (the runtime's filter
   * compiler, injected like `diffDatamodels`); each problem becomes a `DEF_INVALID_FILTER` diagnostic.
   */
  checkFilters?: (manifest: AppManifest) => FilterProblem[] | Promise<FilterProblem[]>;
  /**
   * Also emit the Prisma client into `.svc/client/` (`svc generate --prisma-client`). Default: svc.json
   * `generate.prismaClient`, else false; the runtime never loads it.
   */
  prismaClient?: boolean;
  /**
   * Write a migration that drops tables or columns (`svc generate --accept-data-loss`); without it such a
   * change is refused with one `DEF_DATA_LOSS` diagnostic per table or column.
   */
  acceptDataLoss?: boolean;
}

/** A filter of a view, query or policy that does not compile against the model. */
export interface FilterProblem {
  file: string;
  path: string;
  message: string;
}

export interface GenerateResult {
  manifest: AppManifest;
  /** Files of `.svc/` written (changed or new), relative to `.svc/`. */
  written: string[];
  /** True when nothing changed since the last run, which was not repeated (`written` is then empty). */
  unchanged?: boolean;
  /** The migration folder written, or null when the model did not change. */
  migration: string | null;
  /**
   * Problems that did not stop generation (e.g. `DEF_GLOBAL_RES_IGNORED`, or `DEF_DATA_LOSS` accepted
   * with `acceptDataLoss`), for the CLI to print.
   */
  warnings: Diagnostic[];
}

/**
 * `svc generate`: validates every definition and emits `<appDir>/.svc/` and, when the model changed,
 * a new migration in `<appDir>/migrations/<provider>/`. When neither the app's files, the migrations,
 * `.svc/`, the environment's database and Redis URLs, the options nor svc itself changed since the last
 * successful run, it answers that run's result (`unchanged: true`) in milliseconds.
 * @throws DefinitionError listing every problem (nothing is written then); definition filters are
 *   checked after every other problem is gone, and the migration's risks to stored rows after them
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
