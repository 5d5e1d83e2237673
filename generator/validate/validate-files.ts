/**
 * @module Validates each definition file against its JSON Schema (`schemas/*.schema.json`, draft 2020-12)
 * with ajv, and turns each ajv error into one readable diagnostic whose path is the JSON Pointer of the
 * offending value (STYLE §4). The schemas are read at run time relative to this module, so the same code
 * works from the TypeScript sources (`<repo>/schemas/`) and from `dist/` (`dist/schemas/`).
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { RawApp, RawFile } from '../load/load-app.js';
import { pointerSegment, type Diagnostic } from './diagnostics.js';
import { PROPERTY_TYPES, typeBehaviour } from '../../runtime/contract/index.js';

/** The kinds of definition file, each with its schema (DESIGN §3). */
export const SCHEMA_FILES = {
  svc: 'svc.schema.json',
  collection: 'collection.schema.json',
  view: 'view.schema.json',
  query: 'query.schema.json',
  function: 'function.schema.json',
  external: 'external.schema.json',
  trigger: 'trigger.schema.json',
} as const;
export type DefinitionKind = keyof typeof SCHEMA_FILES;

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

type SchemaDocument = { $defs: Record<string, { properties: { type: Record<string, unknown> } }> };

/** Names a function field may have besides the property types with a `functionField` (SPEC §2). */
const FUNCTION_ONLY_TYPES = ['object'];

/**
 * Adds the type names of `PROPERTY_TYPE_TABLE` as the `enum` of a property's and a function field's
 * `type` (the schema files say only "a string" there, so the table is the one list of types).
 */
function withTypeNames(kind: DefinitionKind, schema: SchemaDocument): SchemaDocument {
  if (kind === 'collection') schema.$defs.property.properties.type.enum = [...PROPERTY_TYPES];
  if (kind === 'function') {
    const names = PROPERTY_TYPES.filter((t) => typeBehaviour(t).functionField !== undefined);
    schema.$defs.typedField.properties.type.enum = [...names, ...FUNCTION_ONLY_TYPES];
  }
  return schema;
}

let validators: Record<DefinitionKind, ValidateFunction> | undefined;

function getValidators(): Record<DefinitionKind, ValidateFunction> {
  if (validators) return validators;
  // allowUnionTypes: a property `default` is string | number | boolean; discriminator: external `connection`.
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true, discriminator: true });
  addFormats(ajv);
  const compiled = {} as Record<DefinitionKind, ValidateFunction>;
  for (const [kind, file] of Object.entries(SCHEMA_FILES) as [DefinitionKind, string][]) {
    const url = new URL(`../../schemas/${file}`, import.meta.url);
    compiled[kind] = ajv.compile(withTypeNames(kind, JSON.parse(readFileSync(url, 'utf8')) as SchemaDocument));
  }
  validators = compiled;
  return compiled;
}

/**
 * Validates every loaded file of an app against its schema.
 * @returns one diagnostic per schema violation (`DEF_MISSING_KEY`, `DEF_UNKNOWN_KEY`, `DEF_INVALID_NAME`,
 *   `DEF_UNKNOWN_FIELD_TYPE`, `DEF_INVALID_VALUE`, `DEF_WRONG_TYPE`), and the set of files that failed
 * Source: DESIGN §3 (definition files), STYLE §4 (diagnostics).
 */
export function validateFiles(raw: RawApp): { diagnostics: Diagnostic[]; invalidFiles: Set<string> } {
  const diagnostics: Diagnostic[] = [];
  const invalidFiles = new Set<string>();
  const groups: [DefinitionKind, RawFile[]][] = [
    ['svc', raw.svc ? [raw.svc] : []],
    ['collection', raw.collections],
    ['view', raw.views],
    ['query', raw.queries],
    ['function', raw.functions],
    ['external', raw.externals],
    ['trigger', raw.triggers ?? []],
  ];
  for (const [kind, files] of groups) {
    for (const file of files) {
      const found = validateFile(kind, file);
      if (found.length) invalidFiles.add(file.file);
      diagnostics.push(...found);
    }
  }
  return { diagnostics, invalidFiles };
}

/** Validates one file against the schema of its kind; returns its diagnostics (empty when valid). */
export function validateFile(kind: DefinitionKind, file: RawFile): Diagnostic[] {
  const validate = getValidators()[kind];
  if (validate(file.data)) return [];
  const seen = new Set<string>();
  const out: Diagnostic[] = [];
  for (const err of validate.errors ?? []) {
    const d = toDiagnostic(kind, file.file, err);
    const key = d && `${d.path}\n${d.message}`;
    if (d && key && !seen.has(key)) {
      seen.add(key);
      out.push(d);
    }
  }
  return out;
}

const PATTERN_HINTS: Record<string, string> = {
  '^[A-Za-z][A-Za-z0-9_]*$': 'must start with a letter and contain only letters, digits and _',
  '^(?!.*__)[A-Za-z][A-Za-z0-9_]*$':
    'must start with a letter, contain only letters, digits and _, and not contain __ (reserved for generated relation fields)',
  '^[a-zA-Z][a-zA-Z0-9_-]*$': 'must start with a letter and contain only letters, digits, _ and -',
  '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)*$': 'must be a dot path of property names, e.g. customer.name',
  '^/': 'must begin with /',
  '^(\\$\\{env\\.[A-Za-z_][A-Za-z0-9_]*\\}|https?://.+)$': 'must be an http(s) URL or an ${env.NAME} reference',
  '^\\$\\{(env|secrets)\\.[A-Za-z_][A-Za-z0-9_]*\\}$':
    'must be a ${secrets.NAME} or ${env.NAME} reference: a secret written out would be committed with the app',
};

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  array: 'an array',
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  null: 'null',
};

function describeType(type: unknown): string {
  const names = (Array.isArray(type) ? type : String(type).split(',')).map((t) => TYPE_NAMES[String(t)] ?? String(t));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
}

function list(values: unknown[]): string {
  return values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
}

/** Names the value at a JSON Pointer for a message: `/access/0/method` → `method`, `/access/0` → `access[0]`. */
function labelOf(instancePath: string): string {
  const segs = instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = segs[segs.length - 1];
  if (last === undefined) return 'the file';
  return /^\d+$/.test(last) && segs.length > 1 ? `${segs[segs.length - 2]}[${last}]` : last;
}

function toDiagnostic(kind: DefinitionKind, file: string, err: ErrorObject): Diagnostic | null {
  const { keyword, params, instancePath } = err;
  const label = labelOf(instancePath);
  const at = (code: string, message: string, path = instancePath): Diagnostic => ({ code, message, file, path });
  const shown = JSON.stringify(err.data);
  if (err.propertyName !== undefined) {
    // An error inside `propertyNames`: the offending value is a key, so point at that key.
    const what = label === 'fields' ? 'field name' : label === 'properties' ? 'property name' : 'key';
    const hint =
      keyword === 'pattern'
        ? (PATTERN_HINTS[String(params.pattern)] ?? `must match ${String(params.pattern)}`)
        : keyword === 'maxLength'
          ? `must have at most ${String(params.limit)} characters`
          : String(err.message);
    return at('DEF_INVALID_NAME', `${what} "${err.propertyName}" ${hint}`, `${instancePath}/${pointerSegment(err.propertyName)}`);
  }
  switch (keyword) {
    case 'if':
    case 'oneOf':
    case 'anyOf':
    case 'propertyNames':
      return null; // wrappers: the errors of their subschemas say what is wrong
    case 'required':
      return at('DEF_MISSING_KEY', `missing required key "${String(params.missingProperty)}"`);
    case 'additionalProperties': {
      const key = String(params.additionalProperty);
      const allowed = Object.keys((err.parentSchema?.properties as object | undefined) ?? {}).filter((k) => k !== '$schema');
      return at(
        'DEF_UNKNOWN_KEY',
        `unknown key "${key}"${allowed.length ? `; allowed keys: ${allowed.join(', ')}` : ''}`,
        `${instancePath}/${pointerSegment(key)}`,
      );
    }
    case 'enum': {
      const allowed = list(params.allowedValues as unknown[]);
      if (label === 'type') {
        const what = kind === 'function' ? 'field type' : 'property type';
        return at('DEF_UNKNOWN_FIELD_TYPE', `unknown ${what} ${shown}; allowed types: ${allowed}`);
      }
      return at('DEF_INVALID_VALUE', `${label} must be one of: ${allowed} (got ${shown})`);
    }
    case 'const':
      return at('DEF_INVALID_VALUE', `${label} must be ${JSON.stringify(params.allowedValue)} (got ${shown})`);
    case 'type':
      if (err.schemaPath === '#/$defs/aggregate/type') {
        return at('DEF_WRONG_TYPE', `${label} must be a dot path string or an object with one of: count, sum, avg, min, max`);
      }
      if (kind === 'function' && instancePath === '/access') {
        // A collection's access is an array of rules; a function's maps each method to its roles.
        return at(
          'DEF_WRONG_TYPE',
          `access must be an object mapping each method to the roles that may call it, e.g. { "GET": ["_AUTHENTICATED_USER"], "POST": ["admin"] }${Array.isArray(err.data) ? " (a collection's list of rules does not apply to functions)" : ''}`,
        );
      }
      return at('DEF_WRONG_TYPE', `${label} must be ${describeType(params.type)}`);
    case 'pattern': {
      const code = ['name', 'collection', 'from'].includes(label) ? 'DEF_INVALID_NAME' : 'DEF_INVALID_VALUE';
      const hint = PATTERN_HINTS[String(params.pattern)] ?? `must match ${String(params.pattern)}`;
      // A secret written out is not echoed into the diagnostic (CI logs, terminals).
      return at(code, label === 'secret' ? `secret ${hint}` : `${label} ${shown} ${hint}`);
    }
    case 'format':
      return at('DEF_INVALID_VALUE', `${label} must be a valid ${String(params.format)} (got ${shown})`);
    case 'minLength':
    case 'maxLength':
    case 'minItems': {
      const unit = keyword === 'minItems' ? 'item' : 'character';
      const n = Number(params.limit);
      const bound = keyword === 'maxLength' ? 'at most' : 'at least';
      return at('DEF_INVALID_VALUE', `${label} must have ${bound} ${n} ${unit}${n === 1 ? '' : 's'}`);
    }
    case 'minimum':
    case 'maximum':
      return at('DEF_INVALID_VALUE', `${label} must be ${keyword === 'minimum' ? 'at least' : 'at most'} ${String(params.limit)} (got ${shown})`);
    case 'uniqueItems':
      return at('DEF_INVALID_VALUE', `${label} must not repeat items (items ${String(params.j)} and ${String(params.i)} are equal)`);
    case 'minProperties':
    case 'maxProperties': {
      const keys = Object.keys((err.parentSchema?.properties as object | undefined) ?? {});
      if (keys.length) return at('DEF_INVALID_VALUE', `${label} must have exactly one key, one of: ${keys.join(', ')}`);
      return at('DEF_INVALID_VALUE', `${label} must have at least ${String(params.limit)} key${Number(params.limit) === 1 ? '' : 's'}`);
    }
    case 'discriminator': {
      const forms = ((err.parentSchema?.oneOf as { properties: { type: { const: string } } }[] | undefined) ?? []).map((s) => s.properties.type.const);
      const got = (err.data as Record<string, unknown>)[String(params.tag)];
      return at(
        'DEF_INVALID_VALUE',
        `${label} type must be one of: ${forms.join(', ')} (got ${JSON.stringify(got) ?? 'nothing'})`,
        params.error === 'mapping' ? `${instancePath}/${String(params.tag)}` : instancePath,
      );
    }
    default:
      return at('DEF_INVALID_VALUE', `${label} ${String(err.message)}`);
  }
}
