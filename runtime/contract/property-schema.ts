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
import { DECIMAL_INTEGER_DIGITS, INT32_MAX, INT32_MIN, MAX_CHILDREN_PER_PARENT } from './limits.js';

/** Decimal strings: an optional minus, 1–35 digits, optionally a point and digits (no exponent). */
export const DECIMAL_STRING_PATTERN = `^-?\\d{1,${DECIMAL_INTEGER_DIGITS}}(\\.\\d+)?$`;
/** Decimal numbers are below this in absolute value (35 integer digits, `numeric(65, 30)`). */
const DECIMAL_LIMIT = 10 ** DECIMAL_INTEGER_DIGITS;

const UUID: JsonSchema = { type: 'string', format: 'uuid' };

/** Limits of a string or text property that are set. */
function lengths(p: Property): JsonSchema {
  return { ...(p.minLength !== undefined && { minLength: p.minLength }), ...(p.maxLength !== undefined && { maxLength: p.maxLength }) };
}

function bounds(p: Property): JsonSchema {
  return { ...(p.minimum !== undefined && { minimum: p.minimum }), ...(p.maximum !== undefined && { maximum: p.maximum }) };
}

function baseSchema(p: Property, forInput: boolean): JsonSchema {
  switch (p.type) {
    case 'string':
      return { type: 'string', ...lengths(p), ...(p.enum && { enum: [...p.enum] }) };
    case 'text':
      return { type: 'string', ...lengths(p) };
    case 'integer':
      return { type: 'integer', format: 'int32', minimum: p.minimum ?? INT32_MIN, maximum: p.maximum ?? INT32_MAX };
    case 'decimal':
      return forInput
        ? {
            anyOf: [
              { type: 'number', exclusiveMinimum: -DECIMAL_LIMIT, exclusiveMaximum: DECIMAL_LIMIT, ...bounds(p) },
              { type: 'string', pattern: DECIMAL_STRING_PATTERN, description: 'An exact decimal, e.g. "12.50"' },
            ],
          }
        : { type: 'number', ...bounds(p) };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date' };
    case 'date-time':
      return { type: 'string', format: 'date-time' };
    case 'guid':
      return { ...UUID };
    case 'lookup':
      return forInput
        ? {
            anyOf: [
              { type: 'object', properties: { id: { ...UUID } }, required: ['id'] },
              { ...UUID, description: 'The id alone' },
            ],
          }
        : {
            type: 'object',
            description: `A ${p.collection} row (lookups=full) or only its id (lookups=id)`,
            properties: { id: { ...UUID } },
            required: ['id'],
            additionalProperties: true,
          };
    case 'blob':
      return structuredClone(BLOB_METADATA_SCHEMA);
  }
}

/** A blob property as rows read it (SPEC §4.5): the stored file's metadata, never its bytes. */
export const BLOB_METADATA_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'A stored file: GET its url (or /{collection}/{id}/{field}) for the bytes',
  properties: {
    name: { type: 'string', description: 'The file name the client sent' },
    size: { type: 'integer', minimum: 0, description: 'Bytes' },
    contentType: { type: 'string', description: 'The media type the client declared' },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the bytes (the download ETag)' },
    url: { type: 'string', description: 'Download path of this version, under the API origin' },
  },
  required: ['name', 'size', 'contentType', 'sha256', 'url'],
};

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
  const base = baseSchema(p, options.forInput);
  const schema = p.required ? base : nullable(base);
  if (p.description) schema.description = p.description;
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
  const len = `${p.maxLength !== undefined ? ` of at most ${p.maxLength} characters` : ''}${p.minLength !== undefined ? `${p.maxLength !== undefined ? ' and' : ' of'} at least ${p.minLength}` : ''}`;
  switch (p.type) {
    case 'string':
      return p.enum ? `one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}` : `a string${len}`;
    case 'text':
      return `a string${len}`;
    case 'integer':
      return `an integer between ${p.minimum ?? INT32_MIN} and ${p.maximum ?? INT32_MAX}`;
    case 'decimal':
      return `a number${p.minimum !== undefined || p.maximum !== undefined ? ` between ${p.minimum ?? '…'} and ${p.maximum ?? '…'}` : ''} (or a decimal string) with at most ${DECIMAL_INTEGER_DIGITS} digits before the point`;
    case 'boolean':
      return 'true or false';
    case 'date':
      return 'a date "YYYY-MM-DD" in the years 0001–9999';
    case 'date-time':
      return 'a date-time in ISO 8601 with a time zone, e.g. "2024-01-31T10:00:00Z", in the years 0001–9999';
    case 'guid':
      return 'a GUID';
    case 'lookup':
      return `an object { "id": "<GUID of a ${p.collection}>" }`;
    case 'blob':
      return 'null (a blob is uploaded on its own path, POST /<collection>/<id>/<field>; null removes it)';
  }
}

const inYears = (year: number) => year >= 1 && year <= 9999;

/**
 * The checks JSON Schema does not carry, for a value that passed `propertyJsonSchema(p, { forInput: true })`
 * (or any value: only the listed cases are looked at).
 * @returns why the value is refused (completing "`<name>` must be …" is the caller's job), or undefined
 */
export function propertyValueProblem(p: Property, value: unknown): string | undefined {
  if (typeof value === 'number' && !Number.isFinite(value)) return 'a finite number';
  if (typeof value !== 'string') return undefined;
  if (value.includes('\u0000')) return 'text without NUL characters (\\u0000)';
  if (p.type === 'decimal' && (p.minimum !== undefined || p.maximum !== undefined)) {
    const n = Number(value);
    if ((p.minimum !== undefined && n < p.minimum) || (p.maximum !== undefined && n > p.maximum)) return describeProperty(p);
  }
  if (p.type === 'date' && !inYears(Number(value.slice(0, 4)))) return 'a date in the years 0001–9999';
  if (p.type === 'date-time') {
    const t = new Date(value);
    if (Number.isNaN(t.getTime()) || !inYears(t.getUTCFullYear()) || !inYears(Number(value.slice(0, 4)))) return 'a date-time in the years 0001–9999';
  }
  return undefined;
}
