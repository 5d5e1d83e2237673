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
      fields.set(m[1], { type: m[2], optional: m[4] === '?', filled: /@default\(|@updatedAt/.test(m[5]), unique: /@unique\b/.test(m[5]) });
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
    for (const name of fields.keys()) {
      if (!now.has(name)) {
        lossy.push({
          code: 'DEF_DATA_LOSS',
          file: fileOf(model),
          path: `/properties/${name}`,
          message: `property "${name}" is gone (removed or renamed): the migration drops its column and the values stored in it`,
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
