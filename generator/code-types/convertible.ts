/**
 * @module Decides whether a TypeScript type converts fully to JSON Schema (SPEC §4.8 rule 7: "a side
 * that cannot be converted fully is published as an opaque object"). We decide on the type, not on
 * typescript-json-schema's output, because that library silently turns functions, `Map`s, `bigint`s
 * and symbols into plausible-looking objects.
 */
import type * as TS from 'typescript';
import { ts } from '../typescript.js';

/**
 * true when `type` is made only of JSON-shaped parts: strings, numbers, booleans, literals, null,
 * undefined (optional), enums, `Date` (a date-time string), arrays, and plain objects (properties and a
 * string index) of such parts. false for any/unknown anywhere, functions and methods, classes with
 * symbol-keyed members (`Map`, `Set`), bigint, symbol, tuples, template-literal types and recursive types.
 * @param at - a node of the same program, used to read property types
 */
export function isJsonConvertible(checker: TS.TypeChecker, type: TS.Type, at: TS.Node): boolean {
  return check(checker, type, at, new Set());
}

const has = (t: TS.Type, flag: TS.TypeFlags) => (t.flags & flag) === flag;

/** An enum type, or a union of an enum's members (ts-morph's `Type.isEnum`, which this module used before). */
function isEnum(t: TS.Type): boolean {
  if (has(t, ts.TypeFlags.Enum)) return true;
  const declaration = t.getSymbol()?.valueDeclaration;
  return declaration !== undefined && ts.isEnumDeclaration(declaration);
}

function check(checker: TS.TypeChecker, t: TS.Type, at: TS.Node, stack: Set<TS.Type>): boolean {
  if (has(t, ts.TypeFlags.Any) || has(t, ts.TypeFlags.Unknown)) return false;
  if ([ts.TypeFlags.String, ts.TypeFlags.Number, ts.TypeFlags.Boolean, ts.TypeFlags.Null, ts.TypeFlags.Undefined].some((f) => has(t, f))) return true;
  if (t.isStringLiteral() || has(t, ts.TypeFlags.NumberLiteral) || has(t, ts.TypeFlags.BooleanLiteral)) return true;
  if ((has(t, ts.TypeFlags.EnumLiteral) && !t.isUnion()) || isEnum(t)) return true;
  if (t.isUnion()) return t.types.every((u) => check(checker, u, at, stack));
  if (t.isIntersection()) return t.types.every((u) => check(checker, u, at, stack));
  if (checker.isTupleType(t)) return false;
  if (checker.isArrayType(t)) return check(checker, checker.getTypeArguments(t as TS.TypeReference)[0], at, stack);
  if (!has(t, ts.TypeFlags.Object)) return false;
  if (t.getSymbol()?.getName() === 'Date') return true;
  if (stack.has(t)) return false; // recursive: not expressible without $ref
  if (t.getCallSignatures().length > 0 || t.getConstructSignatures().length > 0) return false;
  stack.add(t);
  try {
    const index = t.getStringIndexType();
    if (index && !check(checker, index, at, stack)) return false;
    return t.getProperties().every((p) => !p.getName().startsWith('__@') && check(checker, checker.getTypeOfSymbolAtLocation(p, at), at, stack));
  } finally {
    stack.delete(t);
  }
}
