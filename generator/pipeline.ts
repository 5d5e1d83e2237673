/**
 * @module The steps of `svc generate`: load → validate → normalise → buildFiles → migration risks (and
 * unique clashes in the stored rows) → writeFiles → packages (and the Prisma client when asked) →
 * migration (DESIGN §2, STYLE §6). Loaded by `generate` (index.ts) only when the app's inputs changed,
 * since it brings TypeScript's compiler.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AppManifest } from '../runtime/index.js';
import { buildFiles } from './build-files.js';
import type { GenerateOptions, GenerateResult } from './generate-types.js';
import { migrationRisks, renameInSchema, renameProblems } from './migrate/migration-risks.js';
import { stricterColumns, stricterRuleDiagnostics } from './migrate/stricter-rules.js';
import { uniqueClashDiagnostics } from './migrate/unique-clashes.js';
import { lastSnapshot, planMigration } from './migrate/plan-migration.js';
import { emitPackages } from './prisma-client.js';
import { DefinitionError, loadAndValidate } from './validate/index.js';
import { writeFiles } from './write-files.js';

/** A database URL the schema engine may open for a diff: SQLite diffs in a throwaway file. */
function diffUrl(manifest: AppManifest, env: NodeJS.ProcessEnv, scratch: string): string {
  return manifest.provider === 'sqlite' ? `file:${join(scratch, 'diff.db')}` : env.DATABASE_URL || manifest.settings.database;
}

/** svc.json `generate.prismaClient` (the file was validated by `loadAndValidate`). */
function prismaClientWanted(appDir: string): boolean {
  const svc = JSON.parse(readFileSync(join(appDir, 'svc.json'), 'utf8')) as { generate?: { prismaClient?: boolean } };
  return svc.generate?.prismaClient === true;
}

/** The manifest the last run wrote (`.svc/manifest.json`), or null when there is none or it cannot be read. */
function lastManifest(appDir: string): AppManifest | null {
  const file = join(appDir, '.svc', 'manifest.json');
  try {
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as AppManifest) : null;
  } catch {
    return null;
  }
}

/**
 * Every step of `svc generate` (see `generate` in index.ts, which skips this when nothing changed).
 * @throws as `generate` does
 */
export async function runGenerate(options: GenerateOptions): Promise<GenerateResult> {
  const appDir = resolve(options.appDir);
  const env = options.env ?? process.env;
  const { manifest, functionFiles, warnings } = await loadAndValidate(appDir, env, options.checkFilters);
  const files = buildFiles(manifest, functionFiles);
  // What the migration would do to stored rows is judged before anything is written.
  const last = lastSnapshot(appDir, manifest.provider).previous;
  const renames = options.renames ?? [];
  const badRenames = renameProblems(last, files['schema.prisma'], renames);
  if (badRenames.length > 0) throw new DefinitionError(badRenames);
  // Renamed columns keep their values: judged as if the last migration had the new names already.
  const previous = last === null ? null : renameInSchema(last, renames);
  const risks = migrationRisks(previous, files['schema.prisma']);
  const lossRefused = options.acceptDataLoss
    ? []
    : risks.lossy.map((d) => ({ ...d, message: `${d.message}; run svc generate --accept-data-loss to write this migration` }));
  const unique = await uniqueClashDiagnostics({ ...options, appDir, env, manifest }, previous, files['schema.prisma']);
  const stricter = stricterColumns(previous, files['schema.prisma'], lastManifest(appDir), manifest);
  const rules = await stricterRuleDiagnostics({ ...options, appDir, env, manifest }, stricter);
  const refused = [...risks.unfillable, ...lossRefused, ...unique.problems, ...rules.problems];
  if (refused.length > 0) throw new DefinitionError(refused);
  warnings.push(...unique.warnings, ...rules.warnings);
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
      renames,
    });
    return { manifest, written, migration, warnings };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
