/**
 * @module Checks write bodies against the collection's property types with ajv (`row-sql.ts` then
 * turns a checked body into column values). The schemas are the contract's (`propertyJsonSchema` in `runtime/contract/`, the same
 * the OpenAPI document publishes), compiled once per collection at start-up, plus the contract's
 * `propertyValueProblem` (NUL characters, years 0001–9999, finite numbers). Unknown properties and
 * system fields in a body are ignored (SPEC §2, DESIGN §4); a bad value is a 400 naming the property.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Collection } from '../manifest.js';
import { collectionInputSchema, describeProperty, propertyValueProblem, writableProperties } from '../contract/property-schema.js';
import { HttpError, pointerSegment, type ErrorDetail } from '../errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type WriteMode = 'create' | 'replace' | 'merge';

const writable = writableProperties;

/** A compiled checker for one collection: `check(body, mode, basePath)` → details (empty when fine). */
export interface InputChecker {
  check(body: unknown, mode: WriteMode, basePath: string): ErrorDetail[];
}

/**
 * The input checker of a collection: ajv schemas (create/replace need required properties; merge does
 * not), compiled on the collection's first write rather than at start (compiling every collection's
 * took a third of `svc serve`'s start-up). `check` answers one detail per bad property
 * (`<basePath>/<name>`, "`<name>` must be …"), or one detail at `basePath` when the body is not a JSON
 * object. Children keys are checked by their own collection.
 */
export function compileInputChecker(c: Collection): InputChecker {
  let compiled: { full: ValidateFunction; partial: ValidateFunction } | undefined;
  const validators = () => {
    if (compiled) return compiled;
    const ajv = new Ajv({ allErrors: true, strict: false, strictNumbers: true });
    addFormats(ajv);
    ajv.addFormat('int32', true); // the bounds carry the range; the format only names it for OpenAPI
    compiled = { full: ajv.compile(collectionInputSchema(c, { mode: 'create' })), partial: ajv.compile(collectionInputSchema(c, { mode: 'merge' })) };
    return compiled;
  };
  const props = writable(c);
  const byName = new Map(c.properties.map((p) => [p.name, p]));

  const toDetails = (errors: ErrorObject[], basePath: string): ErrorDetail[] => {
    const seen = new Map<string, ErrorDetail>();
    for (const e of errors) {
      const name = e.keyword === 'required' ? String(e.params.missingProperty) : e.instancePath.split('/')[1];
      const p = byName.get(name);
      const path = `${basePath}/${pointerSegment(name ?? '')}`;
      if (seen.has(path)) continue;
      if (!p) {
        seen.set(path, { path: basePath || '/', message: 'the body must be a JSON object' });
        continue;
      }
      const message = e.keyword === 'required' ? `${name} is required (${describeProperty(p)})` : `${name} must be ${describeProperty(p)}`;
      seen.set(path, { path, message });
    }
    return [...seen.values()];
  };

  /** The contract's checks beyond JSON Schema, for values that passed the schema. */
  const valueDetails = (body: Record<string, unknown>, basePath: string): ErrorDetail[] => {
    const out: ErrorDetail[] = [];
    for (const p of props) {
      const problem = body[p.name] === undefined ? undefined : propertyValueProblem(p, body[p.name]);
      if (problem) out.push({ path: `${basePath}/${pointerSegment(p.name)}`, message: `${p.name} must be ${problem}` });
    }
    return out;
  };

  return {
    check(body, mode, basePath) {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return [{ path: basePath || '/', message: 'the body must be a JSON object' }];
      }
      const validate = mode === 'merge' ? validators().partial : validators().full;
      if (!validate(body)) return toDetails(validate.errors ?? [], basePath);
      return valueDetails(body as Record<string, unknown>, basePath);
    },
  };
}

/** 400 VALIDATION_FAILED listing every detail. */
export function validationFailed(details: ErrorDetail[]): HttpError {
  const first = details[0]?.message ?? 'invalid body';
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? 's' : ''})` : '';
  return new HttpError('VALIDATION_FAILED', `${first}${more}`, { details });
}
