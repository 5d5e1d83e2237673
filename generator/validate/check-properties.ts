/**
 * @module Checks of one collection property on its own (DESIGN §3): system names are reserved, type-specific
 * keys apply only to their types, ranges are ordered, and a `default` fits the property's type.
 */
import type { RawPropertyDefinition } from '../model/definitions.js';
import { DECIMAL_INTEGER_DIGITS, DECIMAL_STRING_PATTERN, isSystemField, propertyValueProblem, SYSTEM_FIELD_NAMES } from '../../runtime/contract/index.js';
import { pointer, type Diagnostic } from './diagnostics.js';

/** Which property types each type-specific key applies to. */
const KEY_TYPES: Record<string, readonly string[]> = {
  maxLength: ['string', 'text'],
  minLength: ['string', 'text'],
  minimum: ['integer', 'decimal'],
  maximum: ['integer', 'decimal'],
  enum: ['string'],
  collection: ['lookup'],
};

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const DECIMAL = new RegExp(DECIMAL_STRING_PATTERN);

/**
 * Checks one property of a collection file.
 * @returns diagnostics `DEF_RESERVED_PROPERTY_NAME`, `DEF_CONSTRAINT_NOT_APPLICABLE`, `DEF_INVALID_RANGE`,
 *   `DEF_INVALID_DEFAULT` (empty when the property is fine)
 */
export function checkProperty(file: string, name: string, p: RawPropertyDefinition): Diagnostic[] {
  const out: Diagnostic[] = [];
  const at = (code: string, message: string, ...rest: string[]): void => {
    out.push({ code, message, file, path: pointer('properties', name, ...rest) });
  };
  if (isSystemField(name)) {
    at('DEF_RESERVED_PROPERTY_NAME', `property "${name}" uses a system field name (${SYSTEM_FIELD_NAMES.join(', ')} are on every row)`);
  }
  for (const [key, types] of Object.entries(KEY_TYPES)) {
    if (p[key as keyof RawPropertyDefinition] !== undefined && !types.includes(p.type)) {
      at('DEF_CONSTRAINT_NOT_APPLICABLE', `${key} applies to ${types.join(' and ')} properties, not ${p.type}`, key);
    }
  }
  if (p.minLength !== undefined && p.maxLength !== undefined && p.minLength > p.maxLength) {
    at('DEF_INVALID_RANGE', `minLength ${p.minLength} is greater than maxLength ${p.maxLength}`, 'minLength');
  }
  if (p.minimum !== undefined && p.maximum !== undefined && p.minimum > p.maximum) {
    at('DEF_INVALID_RANGE', `minimum ${p.minimum} is greater than maximum ${p.maximum}`, 'minimum');
  }
  if (p.default !== undefined) {
    const valueProblem = p.default === 'now()' ? undefined : propertyValueProblem({ ...p, name, required: false }, p.default);
    const problem = defaultProblem(p, p.default) ?? (valueProblem && `must be ${valueProblem}`);
    if (problem) at('DEF_INVALID_DEFAULT', `default ${JSON.stringify(p.default)} ${problem}`, 'default');
  }
  return out;
}

function isValidDate(v: string): boolean {
  const m = DATE.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

function rangeProblem(p: RawPropertyDefinition, n: number): string | null {
  if (p.minimum !== undefined && n < p.minimum) return `is less than minimum ${p.minimum}`;
  if (p.maximum !== undefined && n > p.maximum) return `is greater than maximum ${p.maximum}`;
  return null;
}

/** Why `v` cannot be the default of `p`, or null when it fits. */
function defaultProblem(p: RawPropertyDefinition, v: string | number | boolean): string | null {
  switch (p.type) {
    case 'string':
    case 'text':
      if (typeof v !== 'string') return `must be a string for a ${p.type} property`;
      if (p.enum && !p.enum.includes(v)) return `is not one of the enum values: ${p.enum.join(', ')}`;
      if (p.maxLength !== undefined && v.length > p.maxLength) return `is longer than maxLength ${p.maxLength}`;
      if (p.minLength !== undefined && v.length < p.minLength) return `is shorter than minLength ${p.minLength}`;
      return null;
    case 'integer':
      return Number.isInteger(v) ? rangeProblem(p, v as number) : 'must be an integer for an integer property';
    case 'decimal':
      if (typeof v === 'number')
        return Math.abs(v) < 10 ** DECIMAL_INTEGER_DIGITS ? rangeProblem(p, v) : `has more than ${DECIMAL_INTEGER_DIGITS} digits before the point`;
      if (typeof v === 'string' && DECIMAL.test(v)) return rangeProblem(p, Number(v));
      return 'must be a number (or a decimal string such as "12.50") for a decimal property';
    case 'boolean':
      return typeof v === 'boolean' ? null : 'must be true or false for a boolean property';
    case 'date':
      return v === 'now()' || (typeof v === 'string' && isValidDate(v)) ? null : 'must be "now()" or a date such as "2024-01-31" for a date property';
    case 'date-time':
      return v === 'now()' || (typeof v === 'string' && DATE_TIME.test(v) && isValidDate(v.slice(0, 10)) && !Number.isNaN(Date.parse(v)))
        ? null
        : 'must be "now()" or an ISO date-time with a time zone such as "2024-01-31T10:00:00Z" for a date-time property';
    case 'guid':
      return typeof v === 'string' && GUID.test(v) ? null : 'must be a GUID string for a guid property';
    case 'lookup':
    case 'blob':
      return `is not allowed: a ${p.type} property has no default`;
  }
}
