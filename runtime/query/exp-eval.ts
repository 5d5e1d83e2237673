/**
 * @module Evaluates a parsed `exp()` expression (SPEC §4.3 rules 4–6) to a constant, once per
 * request: a number, a `Date` (UTC instant), a string or null. Values are typed while evaluating:
 * numbers, date-times (`now()`), durations (`7D`), strings and null (`me()` when anonymous).
 *
 * Typing rules: number ⊕ number → number for `+ - * /`; date-time ± duration → date-time;
 * duration + date-time → date-time; duration ± duration → duration; duration × number,
 * number × duration and duration / number → duration; `-` negates numbers and durations. The
 * functions take and return numbers (`Round` rounds half away from zero). Anything else — and a
 * division by zero, a non-finite result, a date-time outside years 1–9999 or a final duration —
 * is a 400 naming the position.
 */
import type { ExpNode } from './filter-ast.js';
import { filterError } from './filter-lexer.js';

/** What the caller's request contributes to an expression. */
export interface ExpContext {
  /** The request's time, for `now()` (taken once per request). */
  now: Date;
  /** The caller's identity id, for `me()`; null when anonymous. */
  callerId: string | null;
}

/** The constant an expression evaluates to. */
export type ExpResult = number | Date | string | null;

type Value =
  | { type: 'number'; value: number }
  | { type: 'date-time'; ms: number }
  | { type: 'duration'; ms: number }
  | { type: 'string'; value: string }
  | { type: 'null' };

const UNIT_MS = { D: 86_400_000, H: 3_600_000, M: 60_000, S: 1000 } as const;
/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: what both databases and ISO strings hold. */
const MIN_MS = new Date(0).setUTCFullYear(1, 0, 1);
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Human name of a value's type for error messages. */
function typeName(v: Value): string {
  return v.type === 'null' ? 'null (me() of an anonymous caller)' : `a ${v.type}`;
}

function check(v: Value, node: ExpNode): Value {
  const at = node.position + 1;
  if ((v.type === 'number' || v.type === 'duration') && !Number.isFinite(v.type === 'number' ? v.value : v.ms)) {
    throw filterError(`exp() result is not a finite number at position ${at}`);
  }
  if (v.type === 'date-time' && !(v.ms >= MIN_MS && v.ms <= MAX_MS)) {
    throw filterError(`exp() date-time out of range (years 1 to 9999) at position ${at}`);
  }
  return v;
}

function round(x: number): number {
  return Math.sign(x) * Math.round(Math.abs(x));
}

const NUMERIC: Record<string, (...args: number[]) => number> = {
  Abs: Math.abs,
  Ceiling: Math.ceil,
  Floor: Math.floor,
  Round: round,
  Sqrt: Math.sqrt,
  Max: Math.max,
  Min: Math.min,
  Pow: Math.pow,
};

function binary(node: Extract<ExpNode, { kind: 'binary' }>, l: Value, r: Value): Value {
  const { op } = node;
  if (l.type === 'number' && r.type === 'number') {
    if (op === '/' && r.value === 0) throw filterError(`division by zero in exp() at position ${node.position + 1}`);
    const value = op === '+' ? l.value + r.value : op === '-' ? l.value - r.value : op === '*' ? l.value * r.value : l.value / r.value;
    return { type: 'number', value };
  }
  if (op === '+' || op === '-') {
    const sign = op === '+' ? 1 : -1;
    if (l.type === 'date-time' && r.type === 'duration') return { type: 'date-time', ms: l.ms + sign * r.ms };
    if (l.type === 'duration' && r.type === 'duration') return { type: 'duration', ms: l.ms + sign * r.ms };
    if (op === '+' && l.type === 'duration' && r.type === 'date-time') return { type: 'date-time', ms: l.ms + r.ms };
  } else if (op === '*') {
    if (l.type === 'duration' && r.type === 'number') return { type: 'duration', ms: l.ms * r.value };
    if (l.type === 'number' && r.type === 'duration') return { type: 'duration', ms: l.value * r.ms };
  } else if (l.type === 'duration' && r.type === 'number') {
    if (r.value === 0) throw filterError(`division by zero in exp() at position ${node.position + 1}`);
    return { type: 'duration', ms: l.ms / r.value };
  }
  throw filterError(`operator "${op}" cannot combine ${typeName(l)} and ${typeName(r)} in exp() at position ${node.position + 1}`);
}

function evaluate(node: ExpNode, ctx: ExpContext): Value {
  switch (node.kind) {
    case 'number':
      return check({ type: 'number', value: node.value }, node);
    case 'string':
      return { type: 'string', value: node.value };
    case 'duration':
      return check({ type: 'duration', ms: node.amount * UNIT_MS[node.unit] }, node);
    case 'negate': {
      const v = evaluate(node.operand, ctx);
      if (v.type === 'number') return { type: 'number', value: -v.value };
      if (v.type === 'duration') return { type: 'duration', ms: -v.ms };
      throw filterError(`"-" cannot negate ${typeName(v)} in exp() at position ${node.position + 1}`);
    }
    case 'binary':
      return check(binary(node, evaluate(node.left, ctx), evaluate(node.right, ctx)), node);
    case 'call': {
      if (node.name === 'now') return check({ type: 'date-time', ms: ctx.now.getTime() }, node);
      if (node.name === 'me') return ctx.callerId === null ? { type: 'null' } : { type: 'string', value: ctx.callerId };
      const args = node.args.map((arg) => evaluate(arg, ctx));
      const numbers = args.map((arg, i) => {
        if (arg.type === 'number') return arg.value;
        throw filterError(`function ${node.name} needs a number, found ${typeName(arg)} at position ${node.args[i].position + 1}`);
      });
      if (node.name === 'Sqrt' && numbers[0] < 0) {
        throw filterError(`Sqrt of a negative number in exp() at position ${node.position + 1}`);
      }
      const value = NUMERIC[node.name](...numbers);
      if (Number.isNaN(value)) throw filterError(`${node.name} has no real result in exp() at position ${node.position + 1}`);
      return check({ type: 'number', value }, node);
    }
  }
}

/**
 * Evaluates an `exp()` expression to a constant.
 *
 * @param ast from `parseExpression` (or the `ast` of an `ExpValue` of the filter tree).
 * @param ctx `{ now, callerId }` of the request.
 * @returns a number (`Abs(-2) * 3` → 6), a `Date` (`now() - 7D` → the instant 7 days before `now`),
 *   a string (`me()` → the caller id) or null (`me()` when anonymous). `-0` is returned as 0.
 * @throws HttpError 400 `INVALID_FILTER` on a type error (`now() * 2`, `Sqrt("x")`), a division by
 *   zero, a non-finite or non-real result, a date-time outside years 1–9999, or a result that is a
 *   duration (`7D` alone); the message names the 1-based position in the filter. SPEC §4.3.
 */
export function evaluateExpression(ast: ExpNode, ctx: ExpContext): ExpResult {
  const v = evaluate(ast, ctx);
  switch (v.type) {
    case 'number':
      return v.value === 0 ? 0 : v.value;
    case 'date-time':
      return new Date(v.ms);
    case 'string':
      return v.value;
    case 'null':
      return null;
    case 'duration':
      throw filterError(`exp() evaluates to a duration at position ${ast.position + 1}; add it to now() (e.g. now() - 7D)`);
  }
}
