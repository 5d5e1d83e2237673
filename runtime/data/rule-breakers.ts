/**
 * @module Rows that would break a stricter rule (issue 31 §4): before `svc generate` writes a model
 * that makes an existing property required, lowers its `maxLength` or narrows its `enum`, the CLI asks
 * the app's configured database how many stored rows break the new rule, so the refusal can name them
 * instead of the migration failing when it is applied (`NOT NULL constraint failed`) or the rows
 * failing the API's checks later. Reads only; opened like `uniqueClashes` (`withAppDatabase`).
 */
import type { AppManifest } from '../manifest.js';
import { ident, join, param, sql, type Sql } from '../query/sql.js';
import { notMigratedYet, withAppDatabase } from './unique-clashes.js';

/** A rule a property is about to get: `required`, a lower `maxLength`, or an `enum` of fewer values. */
export type StricterRule = { kind: 'required' } | { kind: 'maxLength'; max: number } | { kind: 'enum'; values: string[] };

/** One property (`collection` is its table, `property` its column) and the rule it is about to get. */
export interface StricterColumn {
  collection: string;
  property: string;
  rule: StricterRule;
}

/** The stored rows that break a rule: how many, and the first few ids. */
export interface RuleBreak extends StricterColumn {
  count: number;
  /** Up to 3 row ids, in id order. */
  ids: string[];
}

/** What `ruleBreakers` found, and why nothing could be checked (no database, unreachable). */
export interface RuleBreakReport {
  breaks: RuleBreak[];
  unchecked?: string;
}

const SHOWN_IDS = 3;

/** The condition a row breaking `rule` meets. */
function breaking(column: Sql, rule: StricterRule): Sql {
  if (rule.kind === 'required') return sql`${column} IS NULL`;
  if (rule.kind === 'maxLength') return sql`${column} IS NOT NULL AND LENGTH(${column}) > ${rule.max}`;
  if (rule.values.length === 0) return sql`${column} IS NOT NULL`;
  return sql`${column} IS NOT NULL AND ${column} NOT IN (${join(
    rule.values.map((v) => param(v)),
    ', ',
  )})`;
}

/**
 * Counts, per column of `columns`, the stored rows that break its new rule in the database `manifest`
 * names for `appDir` (`DATABASE_URL` of `env` first). A SQLite file that does not exist, or a table or
 * column not migrated yet, holds nothing to break; an unreachable database is reported as `unchecked`.
 * @returns the columns with breaking rows, in the order of `columns`
 */
export async function ruleBreakers(options: {
  appDir: string;
  manifest: AppManifest;
  env: NodeJS.ProcessEnv;
  columns: StricterColumn[];
}): Promise<RuleBreakReport> {
  if (options.columns.length === 0) return { breaks: [] };
  const read = await withAppDatabase(options, async (db) => {
    const breaks: RuleBreak[] = [];
    for (const c of options.columns) {
      const table = ident(c.collection);
      const where = breaking(ident(c.property), c.rule);
      try {
        const [{ n }] = await db.query<{ n: unknown }>(sql`SELECT COUNT(*) AS "n" FROM ${table} WHERE ${where}`);
        if (Number(n) === 0) continue;
        const ids = await db.query<{ id: unknown }>(sql`SELECT "id" FROM ${table} WHERE ${where} ORDER BY "id" LIMIT ${SHOWN_IDS}`);
        breaks.push({ ...c, count: Number(n), ids: ids.map((r) => String(r.id)) });
      } catch (err) {
        if (!notMigratedYet(err)) throw err;
      }
    }
    return breaks;
  });
  return 'unchecked' in read ? { breaks: [], unchecked: read.unchecked } : { breaks: read.value ?? [] };
}
