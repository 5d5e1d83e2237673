/**
 * @module Every definition schema (`schemas/*.schema.json`) is a titled 2020-12 schema with an `$id`, and
 * every property it declares, at any depth, has a description (STYLE §1, §5).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';

const dir = new URL('../../schemas/', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.schema.json'))
  .sort();

/** Subschema keywords whose value is one schema, a list of schemas, or a map of name → schema. */
const ONE = ['items', 'additionalProperties', 'propertyNames', 'if', 'then', 'else', 'not', 'contains'];
const MANY = ['oneOf', 'anyOf', 'allOf', 'prefixItems'];
const MAP = ['$defs', 'patternProperties'];

/** JSON Pointers of declared properties without a description. */
function undescribed(schema: unknown, at = ''): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const s = schema as Record<string, unknown>;
  const out: string[] = [];
  for (const [name, sub] of Object.entries((s.properties as Record<string, unknown>) ?? {})) {
    const d = (sub as { description?: unknown }).description;
    if (typeof d !== 'string' || d.trim() === '') out.push(`${at}/properties/${name}`);
    out.push(...undescribed(sub, `${at}/properties/${name}`));
  }
  for (const k of ONE) if (k in s) out.push(...undescribed(s[k], `${at}/${k}`));
  for (const k of MANY) ((s[k] as unknown[]) ?? []).forEach((sub, i) => out.push(...undescribed(sub, `${at}/${k}/${i}`)));
  for (const k of MAP) for (const [n, sub] of Object.entries((s[k] as object) ?? {})) out.push(...undescribed(sub, `${at}/${k}/${n}`));
  return out;
}

describe('definition schemas', () => {
  test('all seven exist', () => {
    expect(files).toEqual([
      'collection.schema.json',
      'external.schema.json',
      'function.schema.json',
      'query.schema.json',
      'svc.schema.json',
      'trigger.schema.json',
      'view.schema.json',
    ]);
  });

  test.each(files)('%s has $id, title, draft 2020-12 and a description on every property', (file) => {
    const schema = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as Record<string, unknown>;
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.$id).toBe(`https://svc.dev/schemas/${file.replace('.schema.json', '.json')}`);
    expect(typeof schema.title).toBe('string');
    expect(typeof schema.description).toBe('string');
    expect(undescribed(schema)).toEqual([]);
  });

  test('the walker finds a missing description', () => {
    expect(undescribed({ properties: { a: { description: 'x', properties: { b: {} } } }, $defs: { d: { properties: { c: {} } } } })).toEqual([
      '/properties/a/properties/b',
      '/$defs/d/properties/c',
    ]);
  });
});
