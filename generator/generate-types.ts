/**
 * @module The options and result of `svc generate` (`generate` in index.ts), shared by its steps
 * (`pipeline.ts`) and its fingerprint (`fingerprint.ts`).
 */
import type { AppManifest, RuleBreakReport, StricterColumn, UniqueClashReport, UniqueColumn } from '../runtime/index.js';
import type { DiffDatamodels } from './migrate/plan-migration.js';
import type { Diagnostic } from './validate/diagnostics.js';

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
   * Reads which values of columns about to become unique are held by more than one row in the app's
   * configured database (the runtime's `uniqueClashes`, injected like `diffDatamodels`); clashes refuse
   * the run with `DEF_UNIQUE_CLASH`. Absent: not checked (the database refuses the migration instead).
   */
  findUniqueClashes?: (check: { appDir: string; manifest: AppManifest; env: NodeJS.ProcessEnv; columns: UniqueColumn[] }) => Promise<UniqueClashReport>;
  /**
   * Counts the stored rows that break a stricter rule (required, a lower `maxLength`, a narrower `enum`)
   * in the app's configured database (the runtime's `ruleBreakers`); called only when the model gets
   * stricter. Rows found refuse the run with `DEF_ROWS_BREAK_RULE`. Absent: not checked.
   */
  findRuleBreakers?: (check: { appDir: string; manifest: AppManifest; env: NodeJS.ProcessEnv; columns: StricterColumn[] }) => Promise<RuleBreakReport>;
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
  /**
   * Properties renamed in place (`svc generate --rename Collection.old=new`): the migration renames the
   * column, keeping its values, instead of dropping one column and adding another. Each must be a
   * property of the last migration gone from the definitions, and the new name one it did not have.
   */
  renames?: { collection: string; from: string; to: string }[];
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
