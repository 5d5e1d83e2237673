/**
 * @module Decides whether a TypeScript type converts fully to JSON Schema (SPEC §4.8 rule 7: "a side
 * that cannot be converted fully is published as an opaque object"). We decide on the type, not on
 * typescript-json-schema's output, because that library silently turns functions, `Map`s, `bigint`s
 * and symbols into plausible-looking objects.
 */
import type { Node, Type } from 'ts-morph';

/**
 * true when `type` is made only of JSON-shaped parts: strings, numbers, booleans, literals, null,
 * undefined (optional), enums, `Date` (a date-time string), arrays, and plain objects (properties and a
 * string index) of such parts. false for any/unknown anywhere, functions and methods, classes with
 * symbol-keyed members (`Map`, `Set`), bigint, symbol, tuples, template-literal types and recursive types.
 * @param at - a node of the same program, used to read property types
 */
export function isJsonConvertible(type: Type, at: Node): boolean {
  return check(type, at, new Set());
}

function check(t: Type, at: Node, stack: Set<Type>): boolean {
  if (t.isAny() || t.isUnknown()) return false;
  if (t.isString() || t.isNumber() || t.isBoolean() || t.isNull() || t.isUndefined()) return true;
  if (t.isStringLiteral() || t.isNumberLiteral() || t.isBooleanLiteral() || t.isEnumLiteral() || t.isEnum()) return true;
  if (t.isUnion()) return t.getUnionTypes().every((u) => check(u, at, stack));
  if (t.isIntersection()) return t.getIntersectionTypes().every((u) => check(u, at, stack));
  if (t.isTuple()) return false;
  if (t.isArray()) return check(t.getArrayElementTypeOrThrow(), at, stack);
  if (!t.isObject()) return false;
  if (t.getSymbol()?.getName() === 'Date') return true;
  if (stack.has(t)) return false; // recursive: not expressible without $ref
  if (t.getCallSignatures().length > 0 || t.getConstructSignatures().length > 0) return false;
  stack.add(t);
  try {
    const index = t.getStringIndexType();
    if (index && !check(index, at, stack)) return false;
    return t.getProperties().every((p) => !p.getName().startsWith('__@') && check(p.getTypeAtLocation(at), at, stack));
  } finally {
    stack.delete(t);
  }
}
