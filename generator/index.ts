/**
 * @module The generator's public entry: `generate(options)` runs load → validate → normalise →
 * buildFiles → writeFiles → packages (and the Prisma client when asked) → migration (DESIGN §2, STYLE §6).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AppManifest } from '../runtime/index.js';
import { buildFiles } from './build-files.js';
import { migrationRisks } from './migrate/migration-risks.js';
import { lastSnapshot, planMigration, type DiffDatamodels } from './migrate/plan-migration.js';
import { emitPackages } from './prisma-client.js';
import type { Diagnostic } from './validate/diagnostics.js';
import { DefinitionError, loadAndValidate } from './validate/index.js';
import { writeFiles } from './write-files.js';

export { buildFiles, type FileMap } from './build-files.js';
export { writeFiles } from './write-files.js';
export { migrationsDir, type DiffDatamodels } from './migrate/plan-migration.js';
export { loadAndValidate } from './validate/index.js';
export { DefinitionError, formatDiagnostic, type Diagnostic } from './validate/diagnostics.js';

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
  checkFilters?: (manifest: AppManifest) => { file: string; path: string; message: string }[];
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

export interface GenerateResult {
  manifest: AppManifest;
  /** Files of `.svc/` written (changed or new), relative to `.svc/`. */
  written: string[];
  /** The migration folder written, or null when the model did not change. */
  migration: string | null;
  /**
   * Problems that did not stop generation (e.g. `DEF_GLOBAL_RES_IGNORED`, or `DEF_DATA_LOSS` accepted
   * with `acceptDataLoss`), for the CLI to print.
   */
  warnings: Diagnostic[];
}

/** A database URL the schema engine may open for a diff: SQLite diffs in a throwaway file. */
function diffUrl(manifest: AppManifest, env: NodeJS.ProcessEnv, scratch: string): string {
  return manifest.provider === 'sqlite' ? `file:${join(scratch, 'diff.db')}` : env.DATABASE_URL || manifest.settings.database;
}

/** svc.json `generate.prismaClient` (the file was validated by `loadAndValidate`). */
function prismaClientWanted(appDir: string): boolean {
  const svc = JSON.parse(readFileSync(join(appDir, 'svc.json'), 'utf8')) as { generate?: { prismaClient?: boolean } };
  return svc.generate?.prismaClient === true;
}

/**
 * `svc generate`: validates every definition and emits `<appDir>/.svc/` and, when the model changed,
 * a new migration in `<appDir>/migrations/<provider>/`.
 * @throws DefinitionError listing every problem (nothing is written then); definition filters are
 *   checked after every other problem is gone, and the migration's risks to stored rows after them
 *   (`DEF_REQUIRED_WITHOUT_DEFAULT`, and `DEF_DATA_LOSS` unless `acceptDataLoss`)
 * @throws Error when Prisma client generation (when asked) or the migration diff fails
 * Source: DESIGN §3a (`svc generate`), §5 (migrations).
 */
export async function generate(options: GenerateOptions): Promise<GenerateResult> {
  const appDir = resolve(options.appDir);
  const env = options.env ?? process.env;
  const { manifest, functionFiles, warnings } = await loadAndValidate(appDir, env);
  const filterDiagnostics = (options.checkFilters?.(manifest) ?? []).map((p) => ({ code: 'DEF_INVALID_FILTER', ...p }));
  if (filterDiagnostics.length > 0) throw new DefinitionError(filterDiagnostics);
  const files = buildFiles(manifest, functionFiles);
  // What the migration would do to stored rows is judged before anything is written.
  const risks = migrationRisks(lastSnapshot(appDir, manifest.provider).previous, files['schema.prisma']);
  const lossRefused = options.acceptDataLoss
    ? []
    : risks.lossy.map((d) => ({ ...d, message: `${d.message}; run svc generate --accept-data-loss to write this migration` }));
  if (risks.unfillable.length + lossRefused.length > 0) throw new DefinitionError([...risks.unfillable, ...lossRefused]);
  if (options.acceptDataLoss) warnings.push(...risks.lossy);
  const svcDir = join(appDir, '.svc');
  const { written } = writeFiles(svcDir, files);
  await emitPackages(svcDir, options.prismaClient ?? prismaClientWanted(appDir));
  const scratch = mkdtempSync(join(tmpdir(), 'svc-diff-'));
  try {
    const migration = await planMigration({
      appDir,
      provider: manifest.provider,
      url: diffUrl(manifest, env, scratch),
      schema: files['schema.prisma'],
      name: options.migrationName,
      diffDatamodels: options.diffDatamodels,
    });
    return { manifest, written, migration, warnings };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
export { initApp } from './init-app.js';
