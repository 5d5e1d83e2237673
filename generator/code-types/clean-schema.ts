/**
 * @module Turns a typescript-json-schema (draft-07) result into a schema fit for an OpenAPI 3.1
 * document: keeps the keywords that describe a JSON shape, drops `$schema`, `default` (taken from
 * object-literal initializers, which are examples of one run, not defaults) and library extensions.
 */
import type { JsonSchema } from '../../runtime/index.js';

const KEEP = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'additionalProperties',
  'format',
  'description',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'title',
]);

/** A copy of `schema` with only the keywords above, recursively (property maps keep every name). */
export function cleanSchema(schema: unknown): JsonSchema {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return {};
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!KEEP.has(key)) continue;
    if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, cleanSchema(v)]));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = typeof value === 'boolean' ? value : cleanSchema(value);
    } else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
      out[key] = (value as unknown[]).map(cleanSchema);
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}
