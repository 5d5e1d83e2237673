/**
 * @module The syntax tree of the filter language (SPEC §4.3): what `parseFilter` produces and
 * `compileFilter` consumes. Pure types, no behaviour. `and`/`or` nodes are n-ary (a chain
 * `a and b and c` is one node with three operands) so long chains do not nest deeply in SQL.
 */

/** Comparison operators of SPEC §4.3, in their canonical lower-case spelling. */
export const FILTER_OPERATORS = ['eq', 'ne', 'gt', 'ge', 'lt', 'le', 'con', 'ncon', 'sw', 'ew'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A string literal; `value` is the decoded text (escapes resolved). */
export interface StringLiteral {
  kind: 'string';
  value: string;
}

/** A number literal; `raw` is its source spelling (`-3.5`), `value` the parsed number. */
export interface NumberLiteral {
  kind: 'number';
  value: number;
  raw: string;
}

export interface BooleanLiteral {
  kind: 'boolean';
  value: boolean;
}

export interface NullLiteral {
  kind: 'null';
}

/**
 * The value on the right of a comparison. A union of kinds so that later value forms
 * (`exp('...')`, date math) can be added as new members.
 */
export type Literal = StringLiteral | NumberLiteral | BooleanLiteral | NullLiteral;

/** `<path> <op>[~] <literal>`. */
export interface Comparison {
  kind: 'comparison';
  /** The property path split at dots: `customer.name` → `['customer', 'name']`. */
  path: string[];
  op: FilterOperator;
  /** `true` when written with a trailing `~` (`eq~`); SPEC §4.3 rule 3. */
  caseInsensitive: boolean;
  value: Literal;
  /** 0-based character offset of the path's first character in the filter text. */
  position: number;
}

/** All operands must hold (at least two operands). */
export interface And {
  kind: 'and';
  operands: FilterNode[];
}

/** At least one operand must hold (at least two operands). */
export interface Or {
  kind: 'or';
  operands: FilterNode[];
}

export type FilterNode = Comparison | And | Or;
