/**
 * @module What a model change would do to rows already stored, read from the datamodels before and after
 * (the last migration's `schema.prisma` and the new one), before any migration is written:
 * - a collection removed, or a column removed (a property removed or renamed), loses data;
 * - a required column without a default added to an existing table cannot be filled for the rows it
 *   holds (SQLite failed half-way with `NOT NULL constraint failed`, PostgreSQL refuses the whole step).
 * `svc generate` refuses the second always and the first unless `--accept-data-loss` (issue 21 §5).
 */
import type { Diagnostic } from '../validate/diagnostics.js';

/** Prisma's scalar types: a field of any other type is a relation (it has no column of its own). */
const SCALARS = new Set(['String', 'Int', 'BigInt', 'Float', 'Decimal', 'Boolean', 'DateTime', 'Json', 'Bytes']);

interface Field {
  type: string;
  optional: boolean;
  /** Has `@default(...)` or `@updatedAt`, so the database can fill it for existing rows. */
  filled: boolean;
  /** Has `@unique`. */
  unique: boolean;
  /** Its `@default(...)` as an SQL literal, when that is a plain string, number or boolean (else undefined). */
  literal?: string;
}

/** Prisma types whose `@default` literal is the column's stored value on both databases. */
const LITERAL_TYPES = new Set(['String', 'Int', 'BigInt', 'Float', 'Boolean']);

/** The SQL literal of a `@default("text")`, `@default(12)` or `@default(true)` among `attributes`. */
function literalDefault(type: string, attributes: string): string | undefined {
  if (!LITERAL_TYPES.has(type)) return undefined;
  const m = /@default\(("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false)\)/.exec(attributes);
  if (!m) return undefined;
  if (!m[1].startsWith('"')) return m[1];
  return `'${(JSON.parse(m[1]) as string).replaceAll("'", "''")}'`;
}

/**
 * Collection model name → its column-bearing (scalar) fields, read from a `schema.prisma` text. System
 * models (mapped to `_svc_…` and `_log` tables) are left out: svc migrates them itself.
 */
export function columnsOf(schema: string): Map<string, Map<string, Field>> {
  const models = new Map<string, Map<string, Field>>();
  for (const block of schema.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)) {
    if (/@@map\("_/.test(block[2])) continue;
    const fields = new Map<string, Field>();
    for (const line of block[2].split('\n')) {
      const m = /^\s+(\w+)\s+(\w+)(\[\])?(\?)?(.*)$/.exec(line);
      if (!m || !SCALARS.has(m[2]) || m[3]) continue;
      fields.set(m[1], {
        type: m[2],
        optional: m[4] === '?',
        filled: /@default\(|@updatedAt/.test(m[5]),
        unique: /@unique\b/.test(m[5]),
        literal: literalDefault(m[2], m[5]),
      });
    }
    models.set(block[1], fields);
  }
  return models;
}

/** The definition file of a collection's model (system models `Svc*` come from no file). */
const fileOf = (model: string) => `collections/${model}.json`;

/**
 * The risks of going from `previous` to `next` (both `schema.prisma` texts; `previous` null for the first
 * migration, which has none).
 * @returns `lossy`: one diagnostic per dropped table or column (`DEF_DATA_LOSS`); `unfillable`: one per
 *   required column without a default added to an existing table (`DEF_REQUIRED_WITHOUT_DEFAULT`)
 */
export function migrationRisks(previous: string | null, next: string): { lossy: Diagnostic[]; unfillable: Diagnostic[] } {
  const lossy: Diagnostic[] = [];
  const unfillable: Diagnostic[] = [];
  if (previous === null) return { lossy, unfillable };
  const before = columnsOf(previous);
  const after = columnsOf(next);
  for (const [model, fields] of before) {
    const now = after.get(model);
    if (!now) {
      lossy.push({
        code: 'DEF_DATA_LOSS',
        file: fileOf(model),
        path: '',
        message: `collection ${model} is gone (removed or renamed): the migration drops its table and every row in it`,
      });
      continue;
    }
    const added = [...now.keys()].filter((n) => !fields.has(n));
    for (const name of fields.keys()) {
      if (!now.has(name)) {
        // A column gone while another came: perhaps a rename, which keeps the values when said so.
        const renamed = added.length
          ? `; if it was renamed to ${added.map((a) => `"${a}"`).join(' or ')}, keep its values with svc generate --rename ${model}.${name}=${added[0]}, ` +
            `or add the new property beside "${name}", copy the values, then remove "${name}"`
          : '';
        lossy.push({
          code: 'DEF_DATA_LOSS',
          file: fileOf(model),
          path: `/properties/${name}`,
          message: `property "${name}" is gone (removed or renamed): the migration drops its column and the values stored in it${renamed}`,
        });
      }
    }
    for (const [name, field] of now) {
      if (fields.has(name) || field.optional || field.filled) continue;
      unfillable.push({
        code: 'DEF_REQUIRED_WITHOUT_DEFAULT',
        file: fileOf(model),
        path: `/properties/${name}`,
        message: `required property "${name}" has no default, so the rows ${model} already holds could not be given a value: add a "default", or add it without "required", fill it in, then make it required`,
      });
    }
  }
  return { lossy, unfillable };
}

/**
 * Columns that `previous` already had without `@unique` and `next` makes unique: the migration adds a
 * unique index over the values their rows hold, which fails when two rows share one (issue 22 item 4).
 * @returns model (collection) and field (property) names, in schema order; none for the first migration
 */
export function newUniqueColumns(previous: string | null, next: string): { collection: string; property: string }[] {
  if (previous === null) return [];
  const before = columnsOf(previous);
  const out: { collection: string; property: string }[] = [];
  for (const [model, fields] of columnsOf(next)) {
    const old = before.get(model);
    for (const [name, field] of fields) if (field.unique && old?.get(name)?.unique === false) out.push({ collection: model, property: name });
  }
  return out;
}

/**
 * Columns that `previous` held as optional and `next` makes required (issue 31 §4). Stored rows holding
 * null would fail the migration (`NOT NULL constraint failed` on SQLite, PostgreSQL's `SET NOT NULL`),
 * unless the new field has a literal default: then `fill` is the `UPDATE` that gives those rows the
 * default, written at the head of the migration.
 * @returns model (collection) and field (property) names in schema order; none for the first migration
 */
export function newlyRequiredColumns(previous: string | null, next: string): { collection: string; property: string; fill?: string }[] {
  if (previous === null) return [];
  const before = columnsOf(previous);
  const out: { collection: string; property: string; fill?: string }[] = [];
  for (const [model, fields] of columnsOf(next)) {
    const old = before.get(model);
    for (const [name, field] of fields) {
      if (field.optional || old?.get(name)?.optional !== true) continue;
      const fill = field.literal === undefined ? undefined : `UPDATE "${model}" SET "${name}" = ${field.literal} WHERE "${name}" IS NULL;`;
      out.push({ collection: model, property: name, ...(fill && { fill }) });
    }
  }
  return out;
}

/** A property renamed in place (`svc generate --rename Collection.old=new`): its column keeps its values. */
export interface Rename {
  collection: string;
  from: string;
  to: string;
}

/**
 * Checks `renames` against the datamodels: `from` must be a column of the collection in `previous`
 * and gone from `next`, `to` new in `next`.
 * @returns one `DEF_BAD_RENAME` diagnostic per rename that does not fit
 */
export function renameProblems(previous: string | null, next: string, renames: Rename[]): Diagnostic[] {
  const before = previous === null ? new Map<string, Map<string, Field>>() : columnsOf(previous);
  const after = columnsOf(next);
  const problems: Diagnostic[] = [];
  for (const r of renames) {
    const was = before.get(r.collection);
    const now = after.get(r.collection);
    const why = !was
      ? `the last migration has no collection ${r.collection}`
      : !was.has(r.from)
        ? `the last migration's ${r.collection} has no property "${r.from}"`
        : now?.has(r.from)
          ? `${r.collection} still has "${r.from}": remove it from the definition`
          : !now?.has(r.to)
            ? `${r.collection} has no property "${r.to}": rename it in the definition first`
            : was.has(r.to)
              ? `the last migration's ${r.collection} already has "${r.to}"`
              : was.get(r.from)!.type !== now.get(r.to)!.type
                ? `"${r.from}" and "${r.to}" are stored as different types (${was.get(r.from)!.type}, ${now.get(r.to)!.type})`
                : '';
    if (why) {
      problems.push({
        code: 'DEF_BAD_RENAME',
        file: fileOf(r.collection),
        path: `/properties/${r.to}`,
        message: `--rename ${r.collection}.${r.from}=${r.to}: ${why}`,
      });
    }
  }
  return problems;
}

/** The regular-expression source of a literal name. */
const literal = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `schema` with the renamed fields under their new names (the field line, the `[...]` field lists of
 * relations and indexes, and the model's `svc:search` comment), the base the rest of the migration is
 * diffed from.
 */
export function renameInSchema(schema: string, renames: Rename[]): string {
  let out = schema;
  for (const r of renames) {
    const block = new RegExp(`(^/// svc:search [^\\n]*\\n)?^model ${literal(r.collection)} \\{[\\s\\S]*?^\\}`, 'm');
    out = out.replace(block, (text) =>
      text
        .replace(new RegExp(`^(\\s+)${literal(r.from)}(?=\\s)`, 'm'), `$1${r.to}`)
        .replace(/\[[^\]\n]*\]/g, (list) => list.replace(new RegExp(`\\b${literal(r.from)}\\b`, 'g'), r.to))
        .replace(
          /^(\/\/\/ svc:search )(.*)$/m,
          (_, head: string, cols: string) =>
            head +
            cols
              .split(',')
              .map((c) => (c.trim() === r.from ? r.to : c.trim()))
              .join(', '),
        ),
    );
  }
  return out;
}
