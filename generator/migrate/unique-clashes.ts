/**
 * @module `svc generate` refuses `"unique": true` on a property whose stored rows already repeat a
 * value (DESIGN §11 "unique", issue 22 item 4): the migration's unique index would fail when applied.
 * The rows are read through the CLI's injected `findUniqueClashes` (the runtime's database access), so
 * the generator itself never opens a database.
 */
import type { AppManifest, UniqueClash } from '../../runtime/index.js';
import type { GenerateOptions } from '../generate-types.js';
import type { Diagnostic } from '../validate/diagnostics.js';
import { newUniqueColumns } from './migration-risks.js';

/** `"ada" (3 rows: id1, id2, id3, …)` for each shown value, and how many more values repeat. */
function describeClash(c: UniqueClash): string {
  const shown = c.values.map((v) => `${JSON.stringify(v.value)} (${v.count} rows: ${v.ids.join(', ')}${v.count > v.ids.length ? ', …' : ''})`);
  const more = c.repeated - c.values.length;
  return `${shown.join('; ')}${more > 0 ? `; and ${more} more repeated ${more === 1 ? 'value' : 'values'}` : ''}`;
}

/**
 * The clash problems (`DEF_UNIQUE_CLASH`, one per property) and warnings (`DEF_UNIQUE_UNCHECKED`, when
 * the database could not be read) of going from the `previous` datamodel to `next`.
 */
export async function uniqueClashDiagnostics(
  options: Pick<GenerateOptions, 'findUniqueClashes'> & { appDir: string; env: NodeJS.ProcessEnv; manifest: AppManifest },
  previous: string | null,
  next: string,
): Promise<{ problems: Diagnostic[]; warnings: Diagnostic[] }> {
  const columns = newUniqueColumns(previous, next);
  if (columns.length === 0 || !options.findUniqueClashes) return { problems: [], warnings: [] };
  const report = await options.findUniqueClashes({ appDir: options.appDir, manifest: options.manifest, env: options.env, columns });
  const problems = report.clashes.map((c) => ({
    code: 'DEF_UNIQUE_CLASH',
    file: `collections/${c.collection}.json`,
    path: `/properties/${c.property}/unique`,
    message:
      `"unique" cannot be added to ${c.collection}.${c.property}: rows in the database already share values: ${describeClash(c)}; ` +
      `change or clear those rows first (nothing was written)`,
  }));
  const warnings = report.unchecked
    ? columns.map((c) => ({
        code: 'DEF_UNIQUE_UNCHECKED',
        file: `collections/${c.collection}.json`,
        path: `/properties/${c.property}/unique`,
        message: `existing rows were not checked for repeated values (${report.unchecked}); the migration fails when applied if two rows share one`,
      }))
    : [];
  return { problems, warnings };
}
