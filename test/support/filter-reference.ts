/**
 * @module A reference evaluator of the filter language (SPEC §4.3) in plain TypeScript: it decides
 * for in-memory rows whether a parsed filter holds, with the documented semantics, so that the
 * SQL the compiler emits can be checked against it on SQLite and PostgreSQL:
 * - a NULL value (or a missing lookup on the way) matches only `ne "x"`, `ncon "x"` and `eq null`;
 * - `~` compares JS `toLowerCase()` of both sides (strings; on ids eq~/ne~ are eq/ne);
 * - strings order by code point (= UTF-8 byte order, what SQLite BINARY and PostgreSQL "C" use);
 * - dates and date-times compare as UTC instants; an `exp()` date-time against a date property is
 *   truncated to its UTC date; UUIDs compare lower-cased.
 * `exp()` values are evaluated with the runtime's `evaluateExpression` (one constant per filter).
 * Only well-typed filters are supported (the compiler rejects the others).
 */
import type { AppManifest, Collection, PropertyType } from '../../dist/runtime/manifest.js';
import type { FilterNode, Literal } from '../../dist/runtime/query/filter-ast.js';
import { evaluateExpression, type ExpContext } from '../../dist/runtime/query/exp-eval.js';
import { uid, type Row } from './filter-db.js';

const SYSTEM_TYPES: Record<string, PropertyType> = { id: 'guid', createdAt: 'date-time', updatedAt: 'date-time', createdBy: 'string' };
const DAY_MS = 86_400_000;

export interface ReferenceData {
  manifest: AppManifest;
  /** Rows by collection name; `id` and lookups hold row names (mapped with `uid`). */
  rows: Record<string, Row[]>;
  exp: ExpContext;
}

type Comparable = string | number | boolean | null;

function typeOf(collection: Collection, name: string): PropertyType {
  return collection.properties.find((p) => p.name === name)?.type ?? SYSTEM_TYPES[name];
}

/** The value of a dot path on a row (null when a lookup on the way is null) and its type. */
function valueAt(data: ReferenceData, collection: Collection, row: Row, path: string[]): { value: Row[string]; type: PropertyType } {
  let current: Row | undefined = row;
  let coll = collection;
  for (let i = 0; ; i++) {
    const name = path[i];
    const value: Row[string] = current?.[name] ?? null;
    const type = typeOf(coll, name);
    // `lookup.id` is the lookup column itself.
    if (i === path.length - 1 || (i === path.length - 2 && path[i + 1] === 'id')) return { value, type: i === path.length - 1 ? type : 'lookup' };
    const target = data.manifest.collections.find((c) => c.name === coll.properties.find((p) => p.name === name)?.collection)!;
    current = value === null ? undefined : data.rows[target.name].find((r) => r.id === value);
    coll = target;
  }
}

/** A stored value in comparable form. */
function fromRow(value: Row[string], type: PropertyType): Comparable {
  if (value === null) return null;
  if (type === 'guid' || type === 'lookup') return uid(value as string);
  if (type === 'date' || type === 'date-time') return Date.parse(value as string);
  return value;
}

/** A filter value in comparable form for a property of `type`. */
function fromLiteral(literal: Literal, type: PropertyType, exp: ExpContext): Comparable {
  if (literal.kind === 'null') return null;
  if (literal.kind === 'exp') {
    const result = evaluateExpression(literal.ast, exp);
    if (result instanceof Date) {
      const ms = result.getTime();
      return type === 'date' ? ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS) : ms;
    }
    return fromLiteral(
      result === null
        ? { kind: 'null' }
        : typeof result === 'number'
          ? { kind: 'number', value: result, raw: String(result) }
          : { kind: 'string', value: result },
      type,
      exp,
    );
  }
  if (literal.kind !== 'string') return literal.value;
  if (type === 'guid' || type === 'lookup') return literal.value.toLowerCase();
  if (type === 'date' || type === 'date-time') return Date.parse(literal.value);
  return literal.value;
}

/** Code point order (UTF-8 byte order), not JS's UTF-16 code unit order. */
function compareStrings(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

function compare(a: Comparable, b: Comparable): number {
  return typeof a === 'string' ? compareStrings(a, b as string) : (a as number) - (b as number);
}

function holds(node: FilterNode, data: ReferenceData, collection: Collection, row: Row): boolean {
  if (node.kind === 'and') return node.operands.every((o) => holds(o, data, collection, row));
  if (node.kind === 'or') return node.operands.some((o) => holds(o, data, collection, row));
  const { value: stored, type } = valueAt(data, collection, row, node.path);
  let v = fromRow(stored, type);
  let c = fromLiteral(node.value, type, data.exp);
  const { op } = node;
  if (c === null) return op === 'eq' ? v === null : v !== null;
  if (v === null) return op === 'ne' || op === 'ncon';
  if (node.caseInsensitive && typeof v === 'string' && typeof c === 'string') {
    v = v.toLowerCase();
    c = c.toLowerCase();
  }
  switch (op) {
    case 'eq':
      return v === c;
    case 'ne':
      return v !== c;
    case 'gt':
      return compare(v, c) > 0;
    case 'ge':
      return compare(v, c) >= 0;
    case 'lt':
      return compare(v, c) < 0;
    case 'le':
      return compare(v, c) <= 0;
    case 'con':
      return (v as string).includes(c as string);
    case 'ncon':
      return !(v as string).includes(c as string);
    case 'sw':
      return (v as string).startsWith(c as string);
    case 'ew':
      return (v as string).endsWith(c as string);
  }
}

/**
 * The names of the rows of `collection` the filter matches, ordered like the databases order
 * them (by `uid(name)`).
 */
export function referenceNames(node: FilterNode, data: ReferenceData, collection: Collection): string[] {
  return data.rows[collection.name]
    .filter((row) => holds(node, data, collection, row))
    .map((row) => row.id as string)
    .sort((a, b) => (uid(a) < uid(b) ? -1 : uid(a) > uid(b) ? 1 : 0));
}
