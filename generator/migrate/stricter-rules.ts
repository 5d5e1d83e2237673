/**
 * @module `svc generate` refuses a stricter rule that stored rows already break (issue 31 §4): a
 * property made required while rows hold no value (and no literal default fills them), a lower
 * `maxLength`, or an `enum` without a value rows hold. The rows are counted through the CLI's injected
 * `findRuleBreakers` (the runtime's database access), and only when the model gets stricter, so an
 * ordinary run opens no database. Required comes from the datamodels (the last migration's
 * `schema.prisma` and the new one); `maxLength` and `enum`, which have no column of their own, from the
 * manifest `.svc/` holds and the new one.
 */
import type { AppManifest, Property, RuleBreak, StricterColumn } from '../../runtime/index.js';
import type { GenerateOptions } from '../generate-types.js';
import type { Diagnostic } from '../validate/diagnostics.js';
import { newlyRequiredColumns } from './migration-risks.js';

/** The properties of `next` whose `maxLength` or `enum` is stricter than in `previous` (same name and type). */
function narrowedProperties(previous: AppManifest | null, next: AppManifest): StricterColumn[] {
  if (!previous) return [];
  const out: StricterColumn[] = [];
  for (const c of next.collections) {
    const old = new Map<string, Property>((previous.collections.find((o) => o.name === c.name)?.properties ?? []).map((p) => [p.name, p]));
    for (const p of c.properties) {
      const was = old.get(p.name);
      if (!was || was.type !== p.type) continue;
      if (p.maxLength !== undefined && (was.maxLength === undefined || p.maxLength < was.maxLength)) {
        out.push({ collection: c.name, property: p.name, rule: { kind: 'maxLength', max: p.maxLength } });
      }
      if (p.enum && (!was.enum || was.enum.some((v) => !p.enum!.includes(v)))) {
        out.push({ collection: c.name, property: p.name, rule: { kind: 'enum', values: p.enum } });
      }
    }
  }
  return out;
}

/** The columns `next` makes stricter than `previous` (datamodels) and `previousManifest` (manifests). */
export function stricterColumns(previous: string | null, next: string, previousManifest: AppManifest | null, manifest: AppManifest): StricterColumn[] {
  const required: StricterColumn[] = newlyRequiredColumns(previous, next)
    .filter((c) => !c.fill)
    .map((c) => ({ collection: c.collection, property: c.property, rule: { kind: 'required' } }));
  return [...required, ...narrowedProperties(previousManifest, manifest)];
}

/** `3 stored rows (ids a, b, c, …)`. */
const rows = (b: RuleBreak) =>
  `${b.count} stored ${b.count === 1 ? 'row' : 'rows'} (${b.count === 1 ? 'id' : 'ids'} ${b.ids.join(', ')}${b.count > b.ids.length ? ', …' : ''})`;

/** The refusal of one rule that rows break: what, which rows, and the ways out. */
function describe(b: RuleBreak): Pick<Diagnostic, 'path' | 'message'> {
  const name = `${b.collection}.${b.property}`;
  if (b.rule.kind === 'required') {
    return {
      path: `/properties/${b.property}/required`,
      message:
        `${name} cannot be made required: ${rows(b)} hold no value; give it a "default" (the migration fills those rows with it), ` +
        `or fill those rows in first and then make it required (nothing was written)`,
    };
  }
  if (b.rule.kind === 'maxLength') {
    return {
      path: `/properties/${b.property}/maxLength`,
      message: `"maxLength": ${b.rule.max} cannot be set on ${name}: ${rows(b)} hold longer values; shorten those values first, or keep a larger limit (nothing was written)`,
    };
  }
  return {
    path: `/properties/${b.property}/enum`,
    message: `"enum" of ${name} leaves out values that ${rows(b)} hold; change those rows first, or keep their values in "enum" (nothing was written)`,
  };
}

/**
 * The problems (`DEF_ROWS_BREAK_RULE`, one per property and rule) and warnings (`DEF_RULE_UNCHECKED`,
 * when the database could not be read) of making the model stricter.
 */
export async function stricterRuleDiagnostics(
  options: Pick<GenerateOptions, 'findRuleBreakers'> & { appDir: string; env: NodeJS.ProcessEnv; manifest: AppManifest },
  columns: StricterColumn[],
): Promise<{ problems: Diagnostic[]; warnings: Diagnostic[] }> {
  if (columns.length === 0 || !options.findRuleBreakers) return { problems: [], warnings: [] };
  const report = await options.findRuleBreakers({ appDir: options.appDir, manifest: options.manifest, env: options.env, columns });
  const problems = report.breaks.map((b) => ({ code: 'DEF_ROWS_BREAK_RULE', file: `collections/${b.collection}.json`, ...describe(b) }));
  const warnings = report.unchecked
    ? columns.map((c) => ({
        code: 'DEF_RULE_UNCHECKED',
        file: `collections/${c.collection}.json`,
        path: `/properties/${c.property}/${c.rule.kind}`,
        message: `existing rows were not checked against the stricter rule (${report.unchecked}); the migration fails when applied if rows break it`,
      }))
    : [];
  return { problems, warnings };
}
