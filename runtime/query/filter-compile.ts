/**
 * @module Compiles a filter tree (SPEC §4.3) into a parameterised SQL condition for SQLite and
 * PostgreSQL: resolves property paths (dot paths into lookups become `IN (SELECT ...)` subqueries),
 * evaluates `exp()` values once per compile, checks each value against its property's type, and
 * emits the same null and case semantics on both databases. Values are always bound; identifiers
 * come only from the manifest. Case-insensitive (`~`) operators compare Unicode lower case (JS
 * `toLowerCase`): `lower(x COLLATE "und-x-icu")` on PostgreSQL, `svc_lower(x)` on SQLite (registered
 * by `registerSqliteFunctions`), the bound value lower-cased in JS.
 */
import type { AppManifest, Collection, PropertyType } from '../manifest.js';
import { SYSTEM_FIELD_TYPES } from '../contract/system-fields.js';
import { MAX_LOOKUP_HOPS } from '../contract/limits.js';
import { typeBehaviour, type FilterConstant, type PropertyTypeBehaviour } from '../contract/property-types.js';
import type { Comparison, ExpValue, FilterNode, FilterOperator, Literal } from './filter-ast.js';
import { filterError, quoteSource } from './filter-lexer.js';
import { evaluateExpression, type ExpContext } from './exp-eval.js';
import { ident, join, raw, sql, type Sql } from './sql.js';

export interface FilterScope {
  /** To resolve lookups to other collections. */
  manifest: AppManifest;
  /** The collection whose rows are filtered. */
  collection: Collection;
  provider: 'sqlite' | 'postgresql';
  /** SQL alias of the row's table in the outer query, e.g. `t0`. */
  alias: string;
  /** The request time, for `now()` in `exp()`; default `new Date()`, taken once per compile. */
  now?: Date;
  /** The caller's identity id, for `me()` in `exp()`; default null (anonymous). */
  callerId?: string | null;
  /**
   * Set when filtering a query's output rows: they have `id` (of this type) and the query's fields,
   * but no `createdAt`, `updatedAt` or `createdBy`.
   */
  queryRow?: { idType: PropertyType };
  /**
   * The conditions (on `alias`) under which the caller may see rows of a collection a dot path walks
   * into, or null when it may not read that collection: a request filter must not probe rows the
   * caller cannot see (DESIGN §3 policies). Absent: no restriction (definition filters, policies).
   */
  readableOf?: (collection: string, alias: string) => Sql[] | null;
}

export type FilterableType = Exclude<PropertyType, 'blob'>;

/** A property path resolved against the manifest. */
export interface ResolvedPath {
  /** Lookups walked before the final column: the lookup column and the collection it points to. */
  hops: { column: string; target: Collection }[];
  /** The collection that owns `column` (the scope's collection when `hops` is empty). */
  collection: Collection;
  column: string;
  type: PropertyType;
}

const SYSTEM_TYPES: Readonly<Record<string, PropertyType>> = SYSTEM_FIELD_TYPES;
const STRING_OPS: FilterOperator[] = ['con', 'ncon', 'sw', 'ew'];
const ORDER_OPS: Record<string, string> = { gt: '>', ge: '>=', lt: '<', le: '<=' };

/**
 * Resolves a dot path (`['customer', 'name']`) from `scope.collection`. A path ending in `.id`
 * after a lookup resolves to the lookup column itself (`customer.id` ≡ `customer`).
 *
 * @param position 1-based position of the path in the filter text, named in error messages.
 * @returns `{ hops, collection, column, type }`; system fields have types id → guid,
 *   createdAt/updatedAt → date-time, createdBy → string.
 * @throws HttpError 400 `INVALID_FILTER` naming the property when a segment is unknown or a
 *   segment other than the last is not a lookup, or naming the limit when the path walks more than
 *   `MAX_LOOKUP_HOPS` (3) lookups (SPEC §4.3, DESIGN §4).
 */
export function resolvePath(scope: Pick<FilterScope, 'manifest' | 'collection' | 'queryRow'>, path: string[], position?: number): ResolvedPath {
  const at = position === undefined ? '' : ` at position ${position}`;
  if (path.length === 0) throw filterError(`expected a property name${at}`);
  const hops: ResolvedPath['hops'] = [];
  let collection = scope.collection;
  for (let i = 0; ; i++) {
    const name = path[i];
    const property = collection.properties.find((p) => p.name === name);
    const queryRow = hops.length === 0 ? scope.queryRow : undefined;
    const type =
      property?.type ?? (queryRow ? (name === 'id' ? queryRow.idType : undefined) : Object.hasOwn(SYSTEM_TYPES, name) ? SYSTEM_TYPES[name] : undefined);
    if (type === undefined) {
      const where = hops.length > 0 ? ` (in "${path.join('.')}")` : '';
      throw filterError(`unknown property "${name}" on ${collection.name}${where}${at}`);
    }
    if (i === path.length - 1) {
      if (name === 'id' && hops.length > 0) {
        const last = hops.pop()!;
        const owner = hops.length > 0 ? hops[hops.length - 1].target : scope.collection;
        return { hops, collection: owner, column: last.column, type: 'lookup' };
      }
      return { hops, collection, column: name, type };
    }
    if (type !== 'lookup') {
      throw filterError(`unknown property "${path.join('.')}" on ${scope.collection.name} ("${name}" is not a lookup)${at}`);
    }
    const target = scope.manifest.collections.find((c) => c.name === property?.collection);
    if (target === undefined) throw filterError(`lookup "${name}" on ${collection.name} has no target collection${at}`);
    const endsInId = i + 2 === path.length && path[i + 1] === 'id'; // `d.id` is the column `d` itself
    if (hops.length === MAX_LOOKUP_HOPS && !endsInId) {
      throw filterError(`"${path.join('.')}" walks more than ${MAX_LOOKUP_HOPS} lookups (the limit of a dot path)${at}`);
    }
    hops.push({ column: name, target });
    collection = target;
  }
}

/* ---------- literals (DESIGN §4 "Data details": dates are strings, all UTC) ---------- */

/** A comparison's value after `exp()` evaluation: a literal, or a date-time that only `exp()` yields. */
type Constant = Exclude<Literal, ExpValue> | { kind: 'date'; value: Date };
type TypeFilter = NonNullable<PropertyTypeBehaviour['filter']>;

/** Evaluates an `exp()` to the constant it stands for (SPEC §4.3 rules 4–6). */
function expConstant(exp: ExpValue, ctx: ExpContext): Constant {
  const result = evaluateExpression(exp.ast, ctx);
  if (result === null) return { kind: 'null' };
  if (result instanceof Date) return { kind: 'date', value: result };
  if (typeof result === 'number') return { kind: 'number', value: result, raw: String(result) };
  return { kind: 'string', value: result };
}

/** How a value is named in error messages: `"abc"`, `1.5`, `exp("now() - 1D") = 2024-...Z`. */
function describeValue(constant: Constant, exp: ExpValue | undefined): string {
  const text =
    constant.kind === 'string'
      ? quoteSource(constant.value)
      : constant.kind === 'number'
        ? constant.raw
        : constant.kind === 'date'
          ? constant.value.toISOString()
          : constant.kind === 'boolean'
            ? String(constant.value)
            : 'null';
  return exp === undefined ? text : `exp(${quoteSource(exp.source)}) = ${text}`;
}

/**
 * The value to bind for a non-null constant, or a 400 naming the property and the expected type.
 * A date-time from `exp()` compared with a `date` property is truncated to its UTC date
 * (`since ge exp('now() - 1D')` means "since yesterday's date").
 */
function literalValue(literal: Constant, type: PropertyType, filter: TypeFilter, property: string, at: number, exp?: ExpValue): unknown {
  const value = filter.convert(literal as FilterConstant);
  // Stored dates lie in the years 0001–9999 (the input rule); PostgreSQL cannot even bind year 0.
  if (value instanceof Date && !(value.getUTCFullYear() >= 1 && value.getUTCFullYear() <= 9999)) {
    throw filterError(`property "${property}" (${type}) expects a value in the years 0001–9999, found ${describeValue(literal, exp)} at position ${at}`);
  }
  if (value !== undefined) return value;
  throw filterError(`property "${property}" (${type}) expects ${filter.expects}, found ${describeValue(literal, exp)} at position ${at}`);
}

/* ---------- SQL ---------- */

/** True when a row whose value is NULL satisfies the comparison (`ne "x"`, `ncon "x"`, `eq null`). */
function nullMatches(op: FilterOperator, value: unknown): boolean {
  return value === null ? op === 'eq' : op === 'ne' || op === 'ncon';
}

/**
 * The condition on one column; `value` is already checked and converted. With `caseInsensitive`
 * on a string column both sides are lower-cased first; order operators then compare the
 * lower-cased strings byte-wise like the case-sensitive ones.
 */
function predicate(op: FilterOperator, column: Sql, value: unknown, type: PropertyType, provider: FilterScope['provider'], caseInsensitive: boolean): Sql {
  if (value === null) return op === 'eq' ? sql`${column} IS NULL` : sql`${column} IS NOT NULL`;
  const pg = provider === 'postgresql';
  let col = column;
  const text = typeBehaviour(type).text;
  if (caseInsensitive && typeof value === 'string' && text) {
    col = pg ? sql`lower(${column} COLLATE "und-x-icu")` : sql`svc_lower(${column})`;
    value = value.toLowerCase();
  }
  switch (op) {
    case 'eq':
      return sql`${col} = ${value}`;
    case 'ne':
      return sql`(${col} <> ${value} OR ${col} IS NULL)`;
    // Byte order on PostgreSQL too (its default collation may be locale-aware; SQLite's is BINARY).
    case 'gt':
    case 'ge':
    case 'lt':
    case 'le': {
      const left = pg && text ? sql`${col} COLLATE "C"` : col;
      return sql`${left} ${raw(ORDER_OPS[op])} ${value}`;
    }
    // SQLite's LIKE ignores ASCII case and both treat % and _ specially, so no LIKE here.
    case 'con':
      return pg ? sql`strpos(${col}, ${value}) > 0` : sql`instr(${col}, ${value}) > 0`;
    case 'ncon':
      return pg ? sql`(strpos(${col}, ${value}) = 0 OR ${col} IS NULL)` : sql`(instr(${col}, ${value}) = 0 OR ${col} IS NULL)`;
    case 'sw':
      return pg ? sql`starts_with(${col}, ${value})` : sql`substr(${col}, 1, length(${value})) = ${value}`;
    case 'ew':
      return pg ? sql`right(${col}, length(CAST(${value} AS text))) = ${value}` : sql`substr(${col}, length(${col}) - length(${value}) + 1) = ${value}`;
  }
}

interface Context {
  scope: FilterScope;
  aliases: number;
  exp: ExpContext;
}

/** Types `~` applies to: strings, and (eq~/ne~ only, same as eq/ne) the already case-free UUIDs. */
function allowsCaseInsensitive(op: FilterOperator, type: PropertyType): boolean {
  const rule = typeBehaviour(type).filter?.caseInsensitive;
  return rule === 'all' || (rule === 'equality' && (op === 'eq' || op === 'ne'));
}

function compileComparison(node: Comparison, ctx: Context): Sql {
  const { scope } = ctx;
  const at = node.position + 1;
  const name = node.path.join('.');
  const resolved = resolvePath(scope, node.path, at);
  const { type } = resolved;
  const behaviour = typeBehaviour(type);
  if (behaviour.filter === null) throw filterError(`property "${name}" is a ${type} and cannot be filtered at position ${at}`);
  if (node.caseInsensitive && !allowsCaseInsensitive(node.op, type)) {
    const ids = behaviour.filter.caseInsensitive === 'equality' ? ' (ids and lookups take only eq~ and ne~)' : '';
    throw filterError(`case-insensitive operator ${node.op}~ needs a string or text property; "${name}" is ${type}${ids} at position ${at}`);
  }
  const exp = node.value.kind === 'exp' ? node.value : undefined;
  const literal = exp === undefined ? (node.value as Constant) : expConstant(exp, ctx.exp);
  if (literal.kind === 'null' && node.op !== 'eq' && node.op !== 'ne') {
    const from = exp === undefined ? '' : ` (${describeValue(literal, exp)})`;
    throw filterError(`null${from} can only be compared with eq or ne, not ${node.op} (property "${name}") at position ${at}`);
  }
  if (STRING_OPS.includes(node.op) && !behaviour.text) {
    throw filterError(`operator ${node.op} needs a string or text property; "${name}" is ${type} at position ${at}`);
  }
  if (!behaviour.filter.ordered && node.op !== 'eq' && node.op !== 'ne') {
    throw filterError(`operator ${node.op} cannot compare ${type} property "${name}" at position ${at}`);
  }
  const value = literal.kind === 'null' ? null : literalValue(literal, type, behaviour.filter, name, at, exp);
  const aliases = [scope.alias, ...resolved.hops.map(() => `${scope.alias}_f${++ctx.aliases}`)];
  const column = ident(aliases[aliases.length - 1], resolved.column);
  let condition = predicate(node.op, column, value, type, scope.provider, node.caseInsensitive);
  const orNull = nullMatches(node.op, value);
  for (let i = resolved.hops.length - 1; i >= 0; i--) {
    const lookup = ident(aliases[i], resolved.hops[i].column);
    const inner = aliases[i + 1];
    const table = ident(resolved.hops[i].target.name);
    const readable = scope.readableOf ? scope.readableOf(resolved.hops[i].target.name, inner) : [];
    // A looked-up row the caller may not see matches nothing, whatever its values.
    if (readable === null) condition = raw('1=0');
    else if (readable.length > 0)
      condition = sql`${condition} AND ${join(
        readable.map((c) => sql`(${c})`),
        ' AND ',
      )}`;
    condition = sql`${lookup} IN (SELECT ${ident(inner, 'id')} FROM ${table} AS ${ident(inner)} WHERE ${condition})`;
    // A row without the lookup behaves as if the looked-up value were null.
    if (orNull) condition = sql`(${lookup} IS NULL OR ${condition})`;
  }
  return condition;
}

function compileNode(node: FilterNode, ctx: Context): Sql {
  if (node.kind === 'comparison') return compileComparison(node, ctx);
  const parts = join(
    node.operands.map((operand) => compileNode(operand, ctx)),
    node.kind === 'and' ? ' AND ' : ' OR ',
  );
  return sql`(${parts})`;
}

/**
 * Compiles a parsed filter into a SQL condition on the row alias `scope.alias`.
 *
 * @param node from `parseFilter`.
 * @returns e.g. `{ text: '("t0"."title" = ? AND "t0"."customer" IN (SELECT "t0_f1"."id" FROM
 *   "Customer" AS "t0_f1" WHERE instr("t0_f1"."name", ?) > 0))', values: ['a', 'b'] }`; render it
 *   with `renderSql`. NULL never matches eq/gt/ge/lt/le/con/sw/ew and always matches `ne "x"` and
 *   `ncon "x"`; a missing lookup counts as a null looked-up value. con/ncon/sw/ew take `%`, `_`,
 *   `\` literally. Without `~` strings compare case-sensitively; with `~` (string, text and
 *   createdBy; eq~/ne~ also on ids and lookups, where they equal eq/ne) they compare Unicode lower
 *   case, and on SQLite need `svc_lower` (`registerSqliteFunctions`). Strings order byte-wise.
 *   Each `exp()` is evaluated once with `scope.now` and `scope.callerId` and then compared like a
 *   literal of its result's type: a number like a number literal, a string like a string literal,
 *   null like `null` (eq → IS NULL, ne → IS NOT NULL), a date-time with date-time properties and,
 *   truncated to its UTC date, with date properties. Dates bind as `Date`, booleans as booleans.
 * @throws HttpError 400 `INVALID_FILTER` for an unknown property, a value of the wrong type (a
 *   fraction for an integer, a date-time for a string...), an operator the property's type does
 *   not support, `~` on a type other than string/text (or eq~/ne~ on guid/lookup), `null` with
 *   anything but eq/ne, a blob property, or an `exp()` that fails to evaluate (type error, division
 *   by zero, see `evaluateExpression`). SPEC §4.3, DESIGN §4.
 */
export function compileFilter(node: FilterNode, scope: FilterScope): Sql {
  const exp: ExpContext = { now: scope.now ?? new Date(), callerId: scope.callerId ?? null };
  return compileNode(node, { scope, aliases: 0, exp });
}
