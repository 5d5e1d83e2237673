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
 * `exp('<expression>')` (SPEC §4.3 rules 4–6): an expression evaluated once per request to a
 * constant (`evaluateExpression` in `exp-eval.ts`), then compared like a literal of its type.
 */
export interface ExpValue {
  kind: 'exp';
  /** The parsed expression; its nodes carry positions in the whole filter text. */
  ast: ExpNode;
  /** The text between the quotes, e.g. `now() - 7D`. */
  source: string;
  /** 0-based character offset of the `exp` keyword in the filter text. */
  position: number;
}

/**
 * The value on the right of a comparison: a literal of DESIGN §4 "Data details" or an `exp()`.
 */
export type Literal = StringLiteral | NumberLiteral | BooleanLiteral | NullLiteral | ExpValue;

/* ---------- exp() expressions (SPEC §4.3 rules 4–6) ---------- */

/** Functions of `exp()`, in their canonical spelling (names are matched case-insensitively). */
export const EXP_FUNCTIONS = ['Abs', 'Ceiling', 'Floor', 'Round', 'Max', 'Min', 'Pow', 'Sqrt', 'now', 'me'] as const;
export type ExpFunction = (typeof EXP_FUNCTIONS)[number];

/** Duration units: days, hours, minutes, seconds. */
export type DurationUnit = 'D' | 'H' | 'M' | 'S';

/**
 * A node of an `exp()` expression. Every node's `position` is the 0-based character offset in the
 * whole filter text (for `binary`, of the operator; for `call`, of the function name).
 */
export type ExpNode =
  | { kind: 'number'; value: number; raw: string; position: number }
  /** A string in the quote kind not used around the expression (`exp('"x"')`), no escapes. */
  | { kind: 'string'; value: string; position: number }
  /** `7D`, `1.5h`: `amount` of `unit`. */
  | { kind: 'duration'; amount: number; unit: DurationUnit; raw: string; position: number }
  | { kind: 'negate'; operand: ExpNode; position: number }
  | { kind: 'binary'; op: '+' | '-' | '*' | '/'; left: ExpNode; right: ExpNode; position: number }
  | { kind: 'call'; name: ExpFunction; args: ExpNode[]; position: number };

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
