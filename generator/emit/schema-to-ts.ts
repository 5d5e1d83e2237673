/**
 * @module JSON Schema (the subset our OpenAPI documents use) → TypeScript type text, with the same
 * meaning openapi-typescript gives it (a test holds the two to mutual assignability): `$ref` to a
 * component → `Schemas["<name>"]`, nullable `type` arrays → `| null`, `readOnly` → `readonly`,
 * `additionalProperties: true` → a `[key: string]: unknown` index, an object with neither properties
 * nor additional properties → `Record<string, unknown>`, anything unconstrained → `unknown`.
 */

type Schema = Record<string, unknown>;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A property key as written in a type literal. */
export const propertyKey = (name: string): string => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

/** `/** text *\/` on its own line, or nothing; `*\/` inside the text is broken up. */
export function docComment(text: unknown, indent: string): string {
  if (typeof text !== 'string' || text === '') return '';
  const lines = text.replace(/\*\//g, '*\\/').split('\n');
  return lines.length === 1 ? `${indent}/** ${lines[0]} */\n` : `${indent}/**\n${lines.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

/** True when `t` has a `|` or `&` outside brackets and string literals (so `T[]` needs `(T)[]`). */
function isComposite(t: string): boolean {
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if ('{([<'.includes(c)) depth++;
    else if ('})]>'.includes(c)) depth--;
    else if (depth === 0 && (c === '|' || c === '&')) return true;
  }
  return false;
}

const wrap = (t: string) => (isComposite(t) ? `(${t})` : t);
const union = (parts: string[]) => [...new Set(parts)].join(' | ');

/**
 * The TypeScript type of a schema.
 * @param indent - indentation of the line the type starts on (nested object members go one deeper)
 */
export function schemaToTs(schema: unknown, indent = ''): string {
  if (schema === true || schema === undefined) return 'unknown';
  if (schema === false) return 'never';
  const s = schema as Schema;
  if (typeof s.$ref === 'string') return `Schemas[${JSON.stringify(s.$ref.replace('#/components/schemas/', ''))}]`;
  if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) {
    return union(((s.oneOf ?? s.anyOf) as unknown[]).map((m) => schemaToTs(m, indent)));
  }
  if (Array.isArray(s.allOf)) return (s.allOf as unknown[]).map((m) => wrap(schemaToTs(m, indent))).join(' & ');
  const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : [];
  const nullable = types.includes('null');
  if (Array.isArray(s.enum)) {
    const values = (s.enum as unknown[]).map((v) => JSON.stringify(v));
    return union(nullable ? [...values, 'null'] : values);
  }
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (types.length === 0) return s.properties || s.additionalProperties !== undefined ? objectType(s, indent) : 'unknown';
  return union(
    types.map((t) => {
      switch (t) {
        case 'null':
          return 'null';
        case 'string':
          return 'string';
        case 'number':
        case 'integer':
          return 'number';
        case 'boolean':
          return 'boolean';
        case 'array':
          return `${wrap(schemaToTs(s.items, indent))}[]`;
        case 'object':
          return objectType(s, indent);
        default:
          return 'unknown';
      }
    }),
  );
}

function objectType(s: Schema, indent: string): string {
  const properties = (s.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const names = Object.keys(properties);
  const extra = s.additionalProperties;
  if (names.length === 0 && (extra === undefined || extra === false)) return extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
  const inner = `${indent}  `;
  const members = names.map((name) => {
    const p = properties[name] as Schema;
    const readonly = typeof p === 'object' && p !== null && p.readOnly === true ? 'readonly ' : '';
    const optional = required.has(name) ? '' : '?';
    return `${docComment(p?.description, inner)}${inner}${readonly}${propertyKey(name)}${optional}: ${schemaToTs(p, inner)};`;
  });
  if (extra !== undefined && extra !== false) members.push(`${inner}[key: string]: ${names.length > 0 ? 'unknown' : schemaToTs(extra, inner)};`);
  return `{\n${members.join('\n')}\n${indent}}`;
}
