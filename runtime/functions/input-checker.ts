/**
 * @module Enforces a function's declared `queryParams` and `requestBody` before its code runs (SPEC §4.8
 * rule 6, DESIGN §4 "Function details") with ajv, compiled once per function at start-up. Query strings
 * are coerced to `integer`, `decimal`, `boolean`; `date`, `date-time` and `guid` are checked by format;
 * `spec.enum` is honoured; `isRequired` makes a field required. Undeclared fields pass through untouched.
 * `responseFields` are never validated.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FunctionDefinition, TypedField } from '../manifest.js';
import { pointerSegment, type ErrorDetail } from '../errors.js';
import { behaviourOf } from '../contract/property-types.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Human description of what a typed field accepts, used in every message about it. */
function describe(f: TypedField): string {
  if (f.spec?.enum) return `one of ${f.spec.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  return behaviourOf(f.type)?.functionInput?.describe ?? 'a string';
}

/** JSON Schema of one field (the type's `functionInput`, `contract/property-types.ts`); in a body a decimal may also be a decimal string. */
function fieldSchema(f: TypedField, part: 'query' | 'body'): object {
  const enumOf = f.spec?.enum ? { enum: f.spec.enum } : {};
  return { ...(behaviourOf(f.type)?.functionInput?.schema(part) ?? { type: 'string' }), ...enumOf };
}

function objectSchema(fields: TypedField[], part: 'query' | 'body'): object {
  return {
    type: 'object',
    properties: Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f, part)])),
    required: fields.filter((f) => f.isRequired).map((f) => f.name),
  };
}

/** The checker of one function: each method returns error details (empty when the input is fine). */
export interface FunctionInputChecker {
  /** Checks and coerces (in place) a copy of the query; details point at `/query/<name>`. */
  checkQuery(query: Record<string, unknown>): ErrorDetail[];
  /** Checks a body (POST and PUT only); details point at `/body/<name>`, or `/body` when it is not an object. */
  checkBody(body: unknown): ErrorDetail[];
  /** Whether the function declares body fields (else the body is not checked). */
  hasBody: boolean;
}

let shared: { coercing: Ajv; plain: Ajv } | undefined;

/** The two ajv instances every function's checks compile in: query (strings coerced) and body. */
function validators(): { coercing: Ajv; plain: Ajv } {
  if (!shared) {
    shared = { coercing: new Ajv({ allErrors: true, strict: false, coerceTypes: true }), plain: new Ajv({ allErrors: true, strict: false }) };
    addFormats(shared.coercing);
    addFormats(shared.plain);
  }
  return shared;
}

/**
 * Compiles the input checks of a function (lazily: each on its first use).
 * Source: SPEC §2 "Function definition" (typed fields), §4.8 rule 6; DESIGN §4 "Function details".
 */
export function compileFunctionInputs(f: FunctionDefinition): FunctionInputChecker {
  // Compiled on the function's first call, not at start-up (ajv's code generation is most of it).
  let query: ValidateFunction | undefined;
  let body: ValidateFunction | undefined;
  const queryCheck = () => (query ??= validators().coercing.compile(objectSchema(f.queryParams, 'query')));
  const bodyCheck = () => (body ??= validators().plain.compile(objectSchema(f.requestBody, 'body')));
  const toDetails = (errors: ErrorObject[] | null | undefined, part: 'query' | 'body', fields: TypedField[]): ErrorDetail[] => {
    const byName = new Map(fields.map((x) => [x.name, x]));
    const seen = new Map<string, ErrorDetail>();
    for (const e of errors ?? []) {
      const name = e.keyword === 'required' ? String(e.params.missingProperty) : decodeSegment(e.instancePath.split('/')[1] ?? '');
      const field = byName.get(name);
      if (!field) continue;
      const path = `/${part}/${pointerSegment(name)}`;
      if (seen.has(path)) continue;
      const where = part === 'query' ? 'query parameter' : 'body field';
      const message = e.keyword === 'required' ? `${where} ${name} is required (${describe(field)})` : `${where} ${name} must be ${describe(field)}`;
      seen.set(path, { path, message });
    }
    return [...seen.values()];
  };
  return {
    hasBody: f.requestBody.length > 0,
    checkQuery(q) {
      const check = queryCheck();
      return check(q) ? [] : toDetails(check.errors, 'query', f.queryParams);
    },
    checkBody(b) {
      const value = b ?? {};
      if (typeof value !== 'object' || Array.isArray(value)) return [{ path: '/body', message: 'the body must be a JSON object' }];
      const check = bodyCheck();
      return check(value) ? [] : toDetails(check.errors, 'body', f.requestBody);
    },
  };
}

function decodeSegment(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}
