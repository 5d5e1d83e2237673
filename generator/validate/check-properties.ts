/**
 * @module Checks of one collection property on its own (DESIGN §3): system names are reserved, type-specific
 * keys apply only to their types, ranges are ordered, and a `default` fits the property's type.
 */
import type { RawPropertyDefinition } from '../model/definitions.js';
import { isSystemField, PROPERTY_TYPES, propertyValueProblem, SYSTEM_FIELD_NAMES, typeBehaviour, type TypeSpecificKey } from '../../runtime/contract/index.js';
import { pointer, type Diagnostic } from './diagnostics.js';

const TYPE_SPECIFIC_KEYS: readonly TypeSpecificKey[] = ['maxLength', 'minLength', 'minimum', 'maximum', 'enum', 'collection', 'unique'];

/** Which property types each type-specific key applies to (from each type's `keys`). */
const KEY_TYPES: Record<string, readonly string[]> = Object.fromEntries(
  TYPE_SPECIFIC_KEYS.map((key) => [key, PROPERTY_TYPES.filter((t) => (typeBehaviour(t).keys as readonly string[]).includes(key))]),
);

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
    const problem = typeBehaviour(p.type).defaultProblem(p, p.default) ?? (valueProblem && `must be ${valueProblem}`);
    if (problem) at('DEF_INVALID_DEFAULT', `default ${JSON.stringify(p.default)} ${problem}`, 'default');
  }
  return out;
}
