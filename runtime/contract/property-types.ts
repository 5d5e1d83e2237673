/**
 * @module One entry per property type (DESIGN §3 types, issue 21 §4): everything the generator and the
 * runtime do differently per type is read from `PROPERTY_TYPE_TABLE`, so adding a type is adding one
 * entry here. An entry gives the definition keys the type takes and its default's check, the JSON
 * Schema of a value (read and write) and its description, the checks JSON Schema cannot say, the
 * Prisma column per database, how a checked value is written and a stored one read (the row codec),
 * how filters compare it and group keys spell it, and its schemas as a query output and a function
 * field. `PROPERTY_TYPES` and `PropertyType` are derived from the table's keys (in its order).
 * No imports outside this folder (DESIGN §2): plain data and functions, SQL as text with `{}` where
 * the column expression goes.
 */
import { DECIMAL_INTEGER_DIGITS, DECIMAL_PRECISION, DECIMAL_SCALE, INT32_MAX, INT32_MIN } from './limits.js';
import { DECIMAL_STRING_PATTERN, GUID_PATTERN, isValidDate, parseFilterDate, publicMetadata } from './property-values.js';

/** A JSON Schema object (the shape `manifest.ts` names `JsonSchema`; declared here so the two files do not import each other). */
type JsonSchema = Record<string, unknown>;

/** What an entry reads of a property (a `Property`, or a definition file's property before normalising). */
export interface PropertyFacts {
  type: string;
  enum?: readonly string[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  collection?: string;
}

/** Definition keys that apply to some types only (DESIGN §3). */
export type TypeSpecificKey = 'maxLength' | 'minLength' | 'minimum' | 'maximum' | 'enum' | 'collection' | 'unique';

/** A filter's value after `exp()` evaluation (SPEC §4.3): a literal, or an instant only `exp()` yields. */
export type FilterConstant =
  { kind: 'string'; value: string } | { kind: 'number'; value: number } | { kind: 'boolean'; value: boolean } | { kind: 'date'; value: Date };

/** Everything that differs per property type. */
export interface PropertyTypeBehaviour {
  /** Type-specific definition keys this type takes (others are `DEF_CONSTRAINT_NOT_APPLICABLE`). */
  keys: readonly TypeSpecificKey[];
  /** Why `v` cannot be this property's `default`, or null when it fits (generator, DESIGN §3). */
  defaultProblem(p: PropertyFacts, v: string | number | boolean): string | null;
  /** JSON Schema of a value, null not yet added; `forInput` as in `propertyJsonSchema`. */
  schema(p: PropertyFacts, forInput: boolean): JsonSchema;
  /** What a value must be, completing "`<name>` must be …". */
  describe(p: PropertyFacts): string;
  /** A check of a string value JSON Schema cannot say (beyond NUL characters): why it is refused. */
  stringProblem?(p: PropertyFacts, value: string): string | undefined;
  /**
   * Prisma scalar and native attribute per database (DESIGN §3 type mapping); `default` spells a
   * property's default as an attribute when the plain `@default(<JSON>)` does not fit ('' for none).
   */
  prisma: { type: string; sqlite: string; postgresql: string; default?: (v: string | number | boolean) => string };
  /** A checked, non-null body value (or default; `"now()"` for dates) → the value bound for its column. */
  encode(v: unknown, now: Date): unknown;
  /** A non-null stored value (either database) → its JSON form (SPEC §2). */
  decode(v: unknown): unknown;
  /** Holds text: full-text search covers it; contains/starts/ends operators and `~` apply; byte order. */
  text: boolean;
  /** Sum and avg apply. */
  numeric: boolean;
  /** How filters compare it (SPEC §4.3); null: it cannot be filtered. */
  filter: {
    /** What a value must be, for "expects …" messages. */
    expects: string;
    /** The bound value for a constant, or undefined when the constant does not fit. */
    convert(c: FilterConstant): unknown;
    /** gt, ge, lt, le apply. */
    ordered: boolean;
    /** Which operators take `~`: all (text), eq~ and ne~ only (ids), or none. */
    caseInsensitive: 'all' | 'equality' | 'none';
  } | null;
  /** A group key as canonical text (`runtime/data/query-source.ts`); `{}` is the column expression. */
  groupKey: { sqlite: string; postgresql: string };
  /** How min and max are spelled on PostgreSQL when its own do not apply (uuid, boolean). */
  postgresMinMax?: 'cast-text' | 'bool-and-or';
  /** OpenAPI schema of a query output field of this type (null included); `collection` of a lookup. */
  queryField(collection: string | undefined): JsonSchema;
  /** As a function's input field (SPEC §4.8 rule 6); absent: not allowed as input. */
  functionInput?: {
    /** The enforced schema; a decimal in a body may also be a decimal string. */
    schema(part: 'query' | 'body'): JsonSchema;
    describe: string;
    /** Whether an `enum` value of the field has this type's JSON type. */
    fits(v: unknown): boolean;
  };
  /** As a function's field in the OpenAPI document; absent: not a function field type. */
  functionField?: JsonSchema;
}

/** Decimal numbers are below this in absolute value (35 integer digits, `numeric(65, 30)`). */
const DECIMAL_LIMIT = 10 ** DECIMAL_INTEGER_DIGITS;
const DECIMAL = new RegExp(DECIMAL_STRING_PATTERN);
/** The function input checker's decimal strings (any number of digits). */
const FUNCTION_DECIMAL_STRING = '^-?\\d+(\\.\\d+)?$';
const DEFAULT_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
const DAY_MS = 86_400_000;
const INT32 = 2147483648;
const UUID: JsonSchema = { type: 'string', format: 'uuid' };

/** A blob property as rows read it (SPEC §4.5): the stored file's metadata, never its bytes (the `BlobMetadata` component). */
export const BLOB_METADATA_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'A stored file: GET its url (or /{collection}/{id}/{field}) for the bytes',
  properties: {
    name: { type: 'string', description: 'The file name the client sent' },
    size: { type: 'integer', minimum: 0, description: 'Bytes' },
    contentType: { type: 'string', description: 'The media type the client declared' },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the bytes (the download ETag)' },
    url: {
      type: 'string',
      description:
        'Download path of this version under the API origin, signed (?v=…&exp=…&sig=…): GET it without cookie or bearer until exp (storage.signedUrlSeconds)',
    },
  },
  required: ['name', 'size', 'contentType', 'sha256', 'url'],
};

const lengths = (p: PropertyFacts): JsonSchema => ({
  ...(p.minLength !== undefined && { minLength: p.minLength }),
  ...(p.maxLength !== undefined && { maxLength: p.maxLength }),
});
const bounds = (p: PropertyFacts): JsonSchema => ({
  ...(p.minimum !== undefined && { minimum: p.minimum }),
  ...(p.maximum !== undefined && { maximum: p.maximum }),
});
const lengthText = (p: PropertyFacts): string =>
  `${p.maxLength !== undefined ? ` of at most ${p.maxLength} characters` : ''}${p.minLength !== undefined ? `${p.maxLength !== undefined ? ' and' : ' of'} at least ${p.minLength}` : ''}`;
const inYears = (year: number) => year >= 1 && year <= 9999;
const nullable = (type: string, extra: JsonSchema = {}): JsonSchema => ({ type: [type, 'null'], ...extra });
const asIs = (v: unknown): unknown => v;
const asString = (v: unknown): unknown => String(v);
const toDate = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));

/**
 * The UTC date-time texts the databases give (PostgreSQL's `2024-01-31 10:00:00.5+00`, its JSON form
 * `2024-01-31T10:00:00.5+00:00`, SQLite's stored `2024-01-31T10:00:00.500+00:00`, and ISO 8601 with `Z`):
 * date, time, milliseconds (1–6 digits; beyond 3 cut, as `Date` does).
 */
const UTC_TEXT = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(?:Z|\+00(?::?00)?)$/;
const DATE_TEXT = /^\d{4}-\d\d-\d\d$/;

/** A date-time value → ISO 8601 UTC with milliseconds; UTC text is rewritten without building a `Date`. */
function dateTimeJson(v: unknown): string {
  if (typeof v === 'string') {
    if (v.length === 24 && v.charCodeAt(23) === 90 /* Z */ && v.charCodeAt(10) === 84 /* T */ && v.charCodeAt(19) === 46 /* . */) return v;
    const m = UTC_TEXT.exec(v);
    if (m) return `${m[1]}T${m[2]}.${m[3] === undefined ? '000' : m[3].length >= 3 ? m[3].slice(0, 3) : m[3].padEnd(3, '0')}Z`;
  }
  return toDate(v).toISOString();
}
const isString = (v: unknown): boolean => typeof v === 'string';

function rangeProblem(p: PropertyFacts, n: number): string | null {
  if (p.minimum !== undefined && n < p.minimum) return `is less than minimum ${p.minimum}`;
  if (p.maximum !== undefined && n > p.maximum) return `is greater than maximum ${p.maximum}`;
  return null;
}

function textDefaultProblem(p: PropertyFacts, v: string | number | boolean): string | null {
  if (typeof v !== 'string') return `must be a string for a ${p.type} property`;
  if (p.enum && !p.enum.includes(v)) return `is not one of the enum values: ${p.enum.join(', ')}`;
  if (p.maxLength !== undefined && v.length > p.maxLength) return `is longer than maxLength ${p.maxLength}`;
  if (p.minLength !== undefined && v.length < p.minLength) return `is shorter than minLength ${p.minLength}`;
  return null;
}

const describeDecimal = (p: PropertyFacts): string =>
  `a number${p.minimum !== undefined || p.maximum !== undefined ? ` between ${p.minimum ?? '…'} and ${p.maximum ?? '…'}` : ''} (or a decimal string) with at most ${DECIMAL_INTEGER_DIGITS} digits before the point`;

const noDefault = (p: PropertyFacts): string => `is not allowed: a ${p.type} property has no default`;

/** A date or date-time default in Prisma: `now()` stays a function, a fixed value is an ISO instant. */
const prismaDateDefault = (v: string | number | boolean): string =>
  v === 'now()' ? '@default(now())' : typeof v === 'string' ? `@default("${new Date(v).toISOString()}")` : `@default(${String(v)})`;

/** String and text share everything but the enum, the describing and PostgreSQL's column type. */
const TEXT_COMMON = {
  defaultProblem: textDefaultProblem,
  encode: asIs,
  decode: asString,
  text: true,
  numeric: false,
  filter: {
    expects: 'a string',
    convert: (c: FilterConstant) => (c.kind === 'string' ? c.value : undefined),
    ordered: true,
    caseInsensitive: 'all',
  },
  groupKey: { sqlite: '{}', postgresql: '{}' },
  queryField: () => nullable('string'),
  functionInput: { schema: () => ({ type: 'string' }), describe: 'a string', fits: isString },
  functionField: { type: 'string' },
} as const satisfies Partial<PropertyTypeBehaviour>;

/** A guid or lookup filter value: a UUID string, lower-cased. */
const uuidFilter = (c: FilterConstant): unknown => (c.kind === 'string' && GUID_PATTERN.test(c.value) ? c.value.toLowerCase() : undefined);

/** The types, in DESIGN §3 order (the order `PROPERTY_TYPES` lists them). */
export const PROPERTY_TYPE_TABLE = {
  string: {
    ...TEXT_COMMON,
    keys: ['maxLength', 'minLength', 'enum', 'unique'],
    schema: (p) => ({ type: 'string', ...lengths(p), ...(p.enum && { enum: [...p.enum] }) }),
    describe: (p) => (p.enum ? `one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}` : `a string${lengthText(p)}`),
    prisma: { type: 'String', sqlite: '', postgresql: '' },
  },
  text: {
    ...TEXT_COMMON,
    keys: ['maxLength', 'minLength'],
    schema: (p) => ({ type: 'string', ...lengths(p) }),
    describe: (p) => `a string${lengthText(p)}`,
    prisma: { type: 'String', sqlite: '', postgresql: '@db.Text' },
  },
  integer: {
    keys: ['minimum', 'maximum', 'unique'],
    defaultProblem: (p, v) => (Number.isInteger(v) ? rangeProblem(p, v as number) : 'must be an integer for an integer property'),
    schema: (p) => ({ type: 'integer', format: 'int32', minimum: p.minimum ?? INT32_MIN, maximum: p.maximum ?? INT32_MAX }),
    describe: (p) => `an integer between ${p.minimum ?? INT32_MIN} and ${p.maximum ?? INT32_MAX}`,
    prisma: { type: 'Int', sqlite: '', postgresql: '' },
    encode: asIs,
    decode: (v) => Number(v),
    text: false,
    numeric: true,
    filter: {
      expects: `an integer between -${INT32} and ${INT32 - 1}`,
      convert: (c) => (c.kind === 'number' && Number.isInteger(c.value) && c.value >= -INT32 && c.value < INT32 ? c.value : undefined),
      ordered: true,
      caseInsensitive: 'none',
    },
    groupKey: { sqlite: 'CAST({} AS TEXT)', postgresql: 'CAST({} AS TEXT)' },
    queryField: () => nullable('integer'),
    functionInput: { schema: () => ({ type: 'integer' }), describe: 'an integer', fits: (v) => Number.isInteger(v) },
    functionField: { type: 'integer' },
  },
  decimal: {
    keys: ['minimum', 'maximum'],
    defaultProblem: (p, v) => {
      if (typeof v === 'number') return Math.abs(v) < DECIMAL_LIMIT ? rangeProblem(p, v) : `has more than ${DECIMAL_INTEGER_DIGITS} digits before the point`;
      if (typeof v === 'string' && DECIMAL.test(v)) return rangeProblem(p, Number(v));
      return 'must be a number (or a decimal string such as "12.50") for a decimal property';
    },
    schema: (p, forInput) =>
      forInput
        ? {
            anyOf: [
              { type: 'number', exclusiveMinimum: -DECIMAL_LIMIT, exclusiveMaximum: DECIMAL_LIMIT, ...bounds(p) },
              { type: 'string', pattern: DECIMAL_STRING_PATTERN, description: 'An exact decimal, e.g. "12.50"' },
            ],
          }
        : { type: 'number', ...bounds(p) },
    describe: describeDecimal,
    stringProblem: (p, value) => {
      if (p.minimum === undefined && p.maximum === undefined) return undefined;
      const n = Number(value);
      if ((p.minimum !== undefined && n < p.minimum) || (p.maximum !== undefined && n > p.maximum)) return describeDecimal(p);
      return undefined;
    },
    prisma: { type: 'Decimal', sqlite: '', postgresql: `@db.Decimal(${DECIMAL_PRECISION}, ${DECIMAL_SCALE})` },
    // Exact decimal text; SQLite's DECIMAL affinity stores it as a number either way.
    encode: (v) => (typeof v === 'number' ? v : String(v)),
    decode: (v) => (typeof v === 'number' ? v : Number(String(v))),
    text: false,
    numeric: true,
    filter: { expects: 'a number', convert: (c) => (c.kind === 'number' ? c.value : undefined), ordered: true, caseInsensitive: 'none' },
    groupKey: {
      sqlite: "PRINTF('%.15g', {})",
      postgresql: "CASE WHEN POSITION('.' IN CAST({} AS TEXT)) > 0 THEN RTRIM(RTRIM(CAST({} AS TEXT), '0'), '.') ELSE CAST({} AS TEXT) END",
    },
    queryField: () => nullable('number'),
    functionInput: {
      schema: (part) => (part === 'query' ? { type: 'number' } : { anyOf: [{ type: 'number' }, { type: 'string', pattern: FUNCTION_DECIMAL_STRING }] }),
      describe: 'a number',
      fits: (v) => typeof v === 'number',
    },
    functionField: { type: 'number' },
  },
  boolean: {
    keys: [],
    defaultProblem: (_p, v) => (typeof v === 'boolean' ? null : 'must be true or false for a boolean property'),
    schema: () => ({ type: 'boolean' }),
    describe: () => 'true or false',
    prisma: { type: 'Boolean', sqlite: '', postgresql: '' },
    encode: asIs,
    decode: (v) => v === true || v === 1 || v === 1n || v === '1' || v === 't' || v === 'true',
    text: false,
    numeric: false,
    filter: { expects: 'true or false', convert: (c) => (c.kind === 'boolean' ? c.value : undefined), ordered: false, caseInsensitive: 'none' },
    groupKey: {
      sqlite: "CASE WHEN {} = 1 THEN 'true' WHEN {} = 0 THEN 'false' END",
      postgresql: "CASE WHEN {} THEN 'true' WHEN NOT {} THEN 'false' END",
    },
    postgresMinMax: 'bool-and-or',
    queryField: () => nullable('boolean'),
    functionInput: { schema: () => ({ type: 'boolean' }), describe: 'true or false', fits: (v) => typeof v === 'boolean' },
    functionField: { type: 'boolean' },
  },
  date: {
    keys: ['unique'],
    defaultProblem: (_p, v) =>
      v === 'now()' || (typeof v === 'string' && isValidDate(v)) ? null : 'must be "now()" or a date such as "2024-01-31" for a date property',
    schema: () => ({ type: 'string', format: 'date' }),
    describe: () => 'a date "YYYY-MM-DD" in the years 0001–9999',
    stringProblem: (_p, value) => (inYears(Number(value.slice(0, 4))) ? undefined : 'a date in the years 0001–9999'),
    prisma: { type: 'DateTime', sqlite: '', postgresql: '@db.Date', default: prismaDateDefault },
    encode: (v, now) => (v === 'now()' ? new Date(now.toISOString().slice(0, 10)) : new Date(`${v as string}T00:00:00Z`)),
    decode: (v) => (typeof v === 'string' && DATE_TEXT.test(v) ? v : toDate(v).toISOString().slice(0, 10)),
    text: false,
    numeric: false,
    filter: {
      expects: 'a date string "YYYY-MM-DD"',
      // A date-time from `exp()` is truncated to its UTC date ("since yesterday's date").
      convert: (c) =>
        c.kind === 'date'
          ? new Date(c.value.getTime() - (((c.value.getTime() % DAY_MS) + DAY_MS) % DAY_MS))
          : c.kind === 'string'
            ? parseFilterDate(c.value, true)
            : undefined,
      ordered: true,
      caseInsensitive: 'none',
    },
    // SQLite stores dates and date-times as `YYYY-MM-DDTHH:MM:SS.mmm+00:00` text.
    groupKey: { sqlite: 'SUBSTR({}, 1, 10)', postgresql: "TO_CHAR({}, 'YYYY-MM-DD')" },
    queryField: () => nullable('string', { format: 'date' }),
    functionInput: { schema: () => ({ type: 'string', format: 'date' }), describe: 'a date "YYYY-MM-DD"', fits: isString },
    functionField: { type: 'string', format: 'date' },
  },
  'date-time': {
    keys: [],
    defaultProblem: (_p, v) =>
      v === 'now()' || (typeof v === 'string' && DEFAULT_DATE_TIME.test(v) && isValidDate(v.slice(0, 10)) && !Number.isNaN(Date.parse(v)))
        ? null
        : 'must be "now()" or an ISO date-time with a time zone such as "2024-01-31T10:00:00Z" for a date-time property',
    schema: () => ({ type: 'string', format: 'date-time' }),
    describe: () => 'a date-time in ISO 8601 with a time zone, e.g. "2024-01-31T10:00:00Z", in the years 0001–9999',
    stringProblem: (_p, value) => {
      const t = new Date(value);
      return Number.isNaN(t.getTime()) || !inYears(t.getUTCFullYear()) || !inYears(Number(value.slice(0, 4)))
        ? 'a date-time in the years 0001–9999'
        : undefined;
    },
    prisma: { type: 'DateTime', sqlite: '', postgresql: '@db.Timestamptz(3)', default: prismaDateDefault },
    encode: (v, now) => (v === 'now()' ? now : new Date(v as string)),
    decode: dateTimeJson,
    text: false,
    numeric: false,
    filter: {
      expects: 'an ISO 8601 date-time string like "2024-01-31T10:00:00Z"',
      convert: (c) => (c.kind === 'date' ? c.value : c.kind === 'string' ? parseFilterDate(c.value, false) : undefined),
      ordered: true,
      caseInsensitive: 'none',
    },
    groupKey: { sqlite: "SUBSTR({}, 1, 23) || 'Z'", postgresql: `TO_CHAR({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` },
    queryField: () => nullable('string', { format: 'date-time' }),
    functionInput: {
      schema: () => ({ type: 'string', format: 'date-time' }),
      describe: 'a date-time in ISO 8601 with a time zone, e.g. "2024-01-31T10:00:00Z"',
      fits: isString,
    },
    functionField: { type: 'string', format: 'date-time' },
  },
  guid: {
    keys: ['unique'],
    defaultProblem: (_p, v) => (typeof v === 'string' && GUID_PATTERN.test(v) ? null : 'must be a GUID string for a guid property'),
    schema: () => ({ ...UUID }),
    describe: () => 'a GUID',
    prisma: { type: 'String', sqlite: '', postgresql: '@db.Uuid' },
    encode: (v) => (v as string).toLowerCase(),
    decode: asString,
    text: false,
    numeric: false,
    filter: { expects: 'a UUID string', convert: uuidFilter, ordered: true, caseInsensitive: 'equality' },
    groupKey: { sqlite: 'CAST({} AS TEXT)', postgresql: 'CAST({} AS TEXT)' },
    postgresMinMax: 'cast-text',
    queryField: () => nullable('string', { format: 'uuid' }),
    functionInput: { schema: () => ({ type: 'string', format: 'uuid' }), describe: 'a GUID', fits: isString },
    functionField: { type: 'string', format: 'uuid' },
  },
  lookup: {
    keys: ['collection', 'unique'],
    defaultProblem: noDefault,
    schema: (p, forInput) =>
      forInput
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
          },
    describe: (p) => `an object { "id": "<GUID of a ${p.collection}>" }`,
    prisma: { type: 'String', sqlite: '', postgresql: '@db.Uuid', default: () => '' },
    encode: (v) => (typeof v === 'string' ? v.toLowerCase() : (v as { id: string }).id.toLowerCase()),
    decode: (v) => ({ id: String(v) }),
    text: false,
    numeric: false,
    filter: { expects: 'a UUID string (the row id)', convert: uuidFilter, ordered: true, caseInsensitive: 'equality' },
    groupKey: { sqlite: 'CAST({} AS TEXT)', postgresql: 'CAST({} AS TEXT)' },
    postgresMinMax: 'cast-text',
    queryField: (collection) => ({
      type: ['object', 'null'],
      description: `The ${collection ?? ''} row's id`,
      properties: { id: { type: 'string', format: 'uuid' } },
      required: ['id'],
    }),
  },
  blob: {
    keys: [],
    defaultProblem: noDefault,
    schema: () => structuredClone(BLOB_METADATA_SCHEMA),
    describe: () => 'null (a blob is uploaded on its own path, POST /<collection>/<id>/<field>; null removes it)',
    prisma: { type: 'String', sqlite: '', postgresql: '@db.Text', default: () => '' },
    encode: asIs,
    decode: publicMetadata,
    text: false,
    numeric: false,
    filter: null,
    groupKey: { sqlite: 'CAST({} AS TEXT)', postgresql: 'CAST({} AS TEXT)' },
    queryField: () => nullable('string'),
    functionField: { type: 'object', description: 'Blob metadata', additionalProperties: true },
  },
} as const satisfies Record<string, PropertyTypeBehaviour>;

/** Property types of collections (DESIGN §3), in the table's order. */
export type PropertyType = keyof typeof PROPERTY_TYPE_TABLE;

/** Every property type, in the table's order. */
export const PROPERTY_TYPES = Object.keys(PROPERTY_TYPE_TABLE) as readonly PropertyType[];

/** The behaviour of a known type. */
export const typeBehaviour = (type: PropertyType): PropertyTypeBehaviour => PROPERTY_TYPE_TABLE[type];

/** The behaviour of a type named by a string from outside the manifest (a function field), if it is a property type. */
export const behaviourOf = (type: string): PropertyTypeBehaviour | undefined =>
  Object.hasOwn(PROPERTY_TYPE_TABLE, type) ? PROPERTY_TYPE_TABLE[type as PropertyType] : undefined;

/** Property types a function's `queryParams` and `requestBody` may use (SPEC §2 "Function definition"). */
export const FUNCTION_INPUT_TYPES: readonly string[] = PROPERTY_TYPES.filter((t) => typeBehaviour(t).functionInput !== undefined);
