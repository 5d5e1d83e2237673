/**
 * @module Checks write bodies against the collection's property types with ajv and converts them
 * to Prisma data. Schemas are compiled once per collection at start-up. Unknown properties and
 * system fields in a body are ignored (SPEC §2, DESIGN §4); a bad value is a 400 naming the property.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Collection, Property } from '../manifest.js';
import { HttpError, pointerSegment, type ErrorDetail } from '../errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const INT32 = { minimum: -2147483648, maximum: 2147483647 };
const DECIMAL_STRING = '^-?\\d+(\\.\\d+)?$';

export type WriteMode = 'create' | 'replace' | 'merge';

/** Human description of what a property accepts, used in every message about it. */
function describe(p: Property): string {
  switch (p.type) {
    case 'string': return p.enum ? `one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}`
      : `a string${p.maxLength !== undefined ? ` of at most ${p.maxLength} characters` : ''}${p.minLength !== undefined ? ` and at least ${p.minLength}` : ''}`;
    case 'text': return 'a string';
    case 'integer': return `an integer${p.minimum !== undefined || p.maximum !== undefined ? ` between ${p.minimum ?? INT32.minimum} and ${p.maximum ?? INT32.maximum}` : ' (32-bit)'}`;
    case 'decimal': return 'a number (or a decimal string)';
    case 'boolean': return 'true or false';
    case 'date': return 'a date "YYYY-MM-DD"';
    case 'date-time': return 'a date-time in ISO 8601 with a time zone, e.g. "2024-01-31T10:00:00Z"';
    case 'guid': return 'a GUID';
    case 'lookup': return `an object { "id": "<GUID of a ${p.collection}>" }`;
    case 'blob': return 'a blob (upload it separately)';
  }
}

function propertySchema(p: Property): object {
  switch (p.type) {
    case 'string': return { type: 'string', ...(p.maxLength !== undefined && { maxLength: p.maxLength }), ...(p.minLength !== undefined && { minLength: p.minLength }), ...(p.enum && { enum: p.enum }) };
    case 'text': return { type: 'string' };
    case 'integer': return { type: 'integer', minimum: p.minimum ?? INT32.minimum, maximum: p.maximum ?? INT32.maximum };
    case 'decimal': return { anyOf: [{ type: 'number', ...(p.minimum !== undefined && { minimum: p.minimum }), ...(p.maximum !== undefined && { maximum: p.maximum }) }, { type: 'string', pattern: DECIMAL_STRING }] };
    case 'boolean': return { type: 'boolean' };
    case 'date': return { type: 'string', format: 'date' };
    case 'date-time': return { type: 'string', format: 'date-time' };
    case 'guid': return { type: 'string', format: 'uuid' };
    case 'lookup': return { anyOf: [{ type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } }, { type: 'string', format: 'uuid' }] };
    case 'blob': return {};
  }
}

const writable = (c: Collection) => c.properties.filter((p) => p.type !== 'blob');

/** A compiled checker for one collection: `check(body, mode, basePath)` → details (empty when fine). */
export interface InputChecker {
  check(body: unknown, mode: WriteMode, basePath: string): ErrorDetail[];
}

/** Compiles the ajv schemas of a collection (create/replace need required properties; merge does not). */
export function compileInputChecker(c: Collection): InputChecker {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  const props = writable(c);
  const properties = Object.fromEntries(props.map((p) => [p.name, p.required ? propertySchema(p) : { anyOf: [{ type: 'null' }, propertySchema(p)] }]));
  const required = props.filter((p) => p.required && p.default === undefined).map((p) => p.name);
  const full: ValidateFunction = ajv.compile({ type: 'object', properties, required });
  const partial: ValidateFunction = ajv.compile({ type: 'object', properties });
  const byName = new Map(props.map((p) => [p.name, p]));

  const toDetails = (errors: ErrorObject[], basePath: string): ErrorDetail[] => {
    const seen = new Map<string, ErrorDetail>();
    for (const e of errors) {
      const name = e.keyword === 'required' ? String(e.params.missingProperty) : e.instancePath.split('/')[1];
      const p = byName.get(name);
      const path = `${basePath}/${pointerSegment(name ?? '')}`;
      if (seen.has(path)) continue;
      if (!p) { seen.set(path, { path: basePath || '/', message: 'the body must be a JSON object' }); continue; }
      const message = e.keyword === 'required' ? `${name} is required (${describe(p)})` : `${name} must be ${describe(p)}`;
      seen.set(path, { path, message });
    }
    return [...seen.values()];
  };

  return {
    check(body, mode, basePath) {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return [{ path: basePath || '/', message: 'the body must be a JSON object' }];
      }
      const validate = mode === 'merge' ? partial : full;
      if (!validate(body)) return toDetails(validate.errors ?? [], basePath);
      return [];
    },
  };
}

/** Prisma data for one validated body: converted values, defaults for create and replace. */
export function toPrismaData(c: Collection, body: Record<string, unknown>, mode: WriteMode): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const p of writable(c)) {
    let v = body[p.name];
    if (v === undefined) {
      if (mode === 'merge') continue;
      v = p.default === undefined ? null : p.default;
    }
    data[p.name] = convert(p, v);
  }
  return data;
}

function convert(p: Property, v: unknown): unknown {
  if (v === null) return null;
  switch (p.type) {
    case 'date': return v === 'now()' ? new Date(new Date().toISOString().slice(0, 10)) : new Date(`${v as string}T00:00:00Z`);
    case 'date-time': return v === 'now()' ? new Date() : new Date(v as string);
    case 'decimal': return String(v);
    case 'lookup': return typeof v === 'string' ? v.toLowerCase() : (v as { id: string }).id.toLowerCase();
    case 'guid': return (v as string).toLowerCase();
    default: return v;
  }
}

/** 400 VALIDATION_FAILED listing every detail. */
export function validationFailed(details: ErrorDetail[]): HttpError {
  const first = details[0]?.message ?? 'invalid body';
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? 's' : ''})` : '';
  return new HttpError('VALIDATION_FAILED', `${first}${more}`, { details });
}
