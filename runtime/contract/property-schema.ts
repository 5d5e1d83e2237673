/**
 * @module Property → JSON Schema (2020-12), written once (DESIGN §2, issue 9): the server's input
 * checker compiles these schemas with ajv (`runtime/data/input.ts`), the OpenAPI document publishes
 * them (`generator/emit/openapi-collections.ts`) and agent tools inherit them from the document. So a
 * value the document allows is a value the server takes: integer bounds (32-bit unless narrowed),
 * decimals as numbers or decimal strings of at most 35 integer digits, string and text lengths, enums.
 *
 * `propertyValueProblem` adds the few checks JSON Schema cannot say plainly and the databases need:
 * no NUL characters in strings (PostgreSQL refuses them), dates and date-times in years 0001–9999
 * (PostgreSQL refuses year 0), real instants (no `23:59:60`), finite numbers.
 */
import type { Collection, JsonSchema, Property } from './manifest.js';
import { MAX_CHILDREN_PER_PARENT } from './limits.js';
import { typeBehaviour } from './property-types.js';

const UUID: JsonSchema = { type: 'string', format: 'uuid' };

/** Adds `null` to a schema: to `type` (and to `enum`), or as another `anyOf` branch. */
function nullable(s: JsonSchema): JsonSchema {
  if (Array.isArray(s.anyOf)) return { ...s, anyOf: [...s.anyOf, { type: 'null' }] };
  const out: JsonSchema = { ...s, type: [s.type as string, 'null'] };
  if (Array.isArray(s.enum)) out.enum = [...s.enum, null];
  return out;
}

/**
 * JSON Schema of one property's value.
 * - `forInput: false` (a row as read): `lookup` is the looked-up row or `{ id }`; `blob` its metadata;
 *   null allowed unless the property is required.
 * - `forInput: true` (a write body, SPEC §4.1): `lookup` is `{ id }` or the bare id; decimals also as
 *   strings; null allowed unless required (a required property refuses null in POST, PUT and PATCH).
 *   Blobs are not written through bodies (only null, see `collectionInputSchema`): do not use it for `blob` properties.
 * The property's `description` is carried over.
 */
export function propertyJsonSchema(p: Property, options: { forInput: boolean }): JsonSchema {
  const base = typeBehaviour(p.type).schema(p, options.forInput);
  const schema = p.required ? base : nullable(base);
  if (p.description) schema.description = p.description;
  if (p.unique) schema.description = `${p.description ? `${p.description}. ` : ''}Unique: no two rows hold the same value (409 UNIQUE_VIOLATION)`;
  return schema;
}

/** Properties a write body may carry (every property except blobs). */
export const writableProperties = (c: Collection): Property[] => c.properties.filter((p) => p.type !== 'blob');

/** Properties a create (POST) or replace (PUT) must carry: required and without a default. */
export const requiredInputNames = (c: Collection, except?: string): string[] =>
  writableProperties(c)
    .filter((p) => p.required && p.default === undefined && p.name !== except)
    .map((p) => p.name);

/**
 * JSON Schema of a write body of collection `c` (SPEC §4.1, §4.4): `mode: 'create'` (POST, PUT) lists
 * the required properties, `'merge'` (PATCH) none. With `children` (the manifest's collections), each
 * `<Child>.<lookup>` key is an array of at most `MAX_CHILDREN_PER_PARENT` children: a new child (the
 * child's create schema) or, with `id`, an existing child whose given properties change; the
 * pointer to the parent is set by the service and left out.
 */
export function collectionInputSchema(c: Collection, options: { mode: 'create' | 'merge'; children?: readonly Collection[] }): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const p of writableProperties(c)) properties[p.name] = propertyJsonSchema(p, { forInput: true });
  for (const p of c.properties) if (p.type === 'blob') properties[p.name] = blobInputSchema(c, p);
  for (const rel of options.children ? c.children : []) {
    const child = options.children!.find((x) => x.name === rel.collection);
    if (child) properties[rel.key] = childrenSchema(child, rel.field);
  }
  const required = options.mode === 'create' ? requiredInputNames(c) : [];
  return { type: 'object', properties, ...(required.length > 0 && { required }) };
}

/** A blob in a write body: only null (removes the stored file); the bytes are uploaded on their own path. */
function blobInputSchema(c: Collection, p: Property): JsonSchema {
  return { type: 'null', description: `null removes the stored file; upload one with POST /${c.name}/{id}/${p.name} (omitted: unchanged)` };
}

function childrenSchema(child: Collection, parentField: string): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const p of writableProperties(child)) if (p.name !== parentField) properties[p.name] = propertyJsonSchema(p, { forInput: true });
  const required = requiredInputNames(child, parentField);
  return {
    type: 'array',
    maxItems: MAX_CHILDREN_PER_PARENT,
    description: `${child.name} rows whose ${parentField} is this row: an item with id updates that child (only the given properties), one without creates it; on PUT and PATCH, existing children missing from the array are deleted`,
    items: {
      anyOf: [
        { type: 'object', description: `A new ${child.name}`, properties, ...(required.length > 0 && { required }) },
        { type: 'object', description: `An existing ${child.name}`, properties: { id: { ...UUID }, ...properties }, required: ['id'] },
      ],
    },
  };
}

/** Human description of what a property accepts, used in every message about it. */
export function describeProperty(p: Property): string {
  return typeBehaviour(p.type).describe(p);
}

/**
 * The checks JSON Schema does not carry, for a value that passed `propertyJsonSchema(p, { forInput: true })`
 * (or any value: only the listed cases are looked at): finite numbers, no NUL in strings, then the
 * type's own `stringProblem` (`./property-types.ts`).
 * @returns why the value is refused (completing "`<name>` must be …" is the caller's job), or undefined
 */
export function propertyValueProblem(p: Property, value: unknown): string | undefined {
  if (typeof value === 'number' && !Number.isFinite(value)) return 'a finite number';
  if (typeof value !== 'string') return undefined;
  if (value.includes('\u0000')) return 'text without NUL characters (\\u0000)';
  return typeBehaviour(p.type).stringProblem?.(p, value);
}
