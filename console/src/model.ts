/**
 * What the console knows of the app: its collections, views, queries, external collections and
 * functions, read from `GET /api/_openapi` and `GET /api/_admin/schema` (DESIGN §9: the manifest
 * without secret values), which gives lookup targets, child relations (with their `include` keys)
 * and the definitions themselves.
 */
import { call } from './api';

/* eslint-disable @typescript-eslint/no-explicit-any -- OpenAPI and manifest documents are read loosely */
export type JsonSchema = Record<string, any>;
export type Kind = 'collection' | 'view' | 'query' | 'external';

/** One property of a resource, as the grid and the row panel show it. */
export interface Prop {
  name: string;
  /** The svc type (`string`, `text`, `integer`, `decimal`, `boolean`, `date`, `date-time`, `guid`, `lookup`, `blob`, `json`). */
  type: string;
  required: boolean;
  /** System fields (`id`, `createdAt`, …) and every field of a query. */
  readOnly: boolean;
  enum?: unknown[];
  /** The collection a lookup points at. */
  target?: string;
  description?: string;
}

/** A child relation (`include` key `<Child>.<field>`). */
export interface Child {
  key: string;
  collection: string;
  field: string;
}

export interface Resource {
  name: string;
  kind: Kind;
  description?: string;
  props: Prop[];
  search: boolean;
  children: Child[];
  /** Collections and views take POST, PATCH and DELETE. */
  writable: boolean;
  /** The manifest entry (from `/api/_admin/schema`), when the server gave it. */
  definition?: unknown;
}

/** One HTTP operation of a function, from openapi.json. */
export interface Operation {
  method: string;
  path: string;
  summary?: string;
  params: { name: string; required: boolean; schema: JsonSchema; description?: string }[];
  body?: JsonSchema;
}

export interface FunctionDef {
  name: string;
  description?: string;
  operations: Operation[];
  definition?: unknown;
}

export interface Model {
  resources: Resource[];
  functions: FunctionDef[];
  openapi: JsonSchema;
  /** The admin schema (the manifest as the console shows it). */
  admin: JsonSchema;
}

const SYSTEM = new Set(['id', 'createdAt', 'updatedAt', 'createdBy']);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Follows a `$ref` of the document (`#/components/schemas/X`). */
export function deref(doc: JsonSchema, schema: JsonSchema | undefined): JsonSchema | undefined {
  let s = schema;
  for (let i = 0; s?.$ref && i < 10; i++)
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((o: any, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  return s;
}

function typeOf(s: JsonSchema): string {
  const t = (Array.isArray(s.type) ? s.type.find((x: string) => x !== 'null') : s.type) ?? 'json';
  if (t === 'object' && s.properties?.sha256) return 'blob';
  if (t === 'object' && s.properties?.id) return 'lookup';
  if (t === 'string') return s.format === 'date-time' ? 'date-time' : s.format === 'date' ? 'date' : s.format === 'uuid' ? 'guid' : 'string';
  if (t === 'number') return 'decimal';
  if (t === 'integer' || t === 'boolean') return t;
  return 'json';
}

function propsFromOpenApi(doc: JsonSchema, name: string, names: Set<string>): Prop[] {
  const row = deref(doc, doc.components?.schemas?.[name]) ?? {};
  const input = doc.components?.schemas?.[`${name}Input`];
  const required = new Set<string>(input?.required ?? []);
  return Object.entries<JsonSchema>(row.properties ?? {}).map(([p, s]) => {
    const type = typeOf(s);
    const target = type === 'lookup' ? [...names].find((n) => n.toLowerCase() === p.toLowerCase()) : undefined;
    return {
      name: p,
      type,
      required: required.has(p),
      readOnly: SYSTEM.has(p) || !input || s.readOnly === true,
      enum: s.enum?.filter((v: unknown) => v !== null),
      target,
      description: s.description,
    };
  });
}

function fromManifestProps(list: any[], system: Prop[]): Prop[] {
  return [
    ...system.filter((p) => p.name === 'id'),
    ...list.map((p) => ({
      name: p.name,
      type: p.type,
      required: p.required === true,
      readOnly: false,
      enum: p.enum,
      target: p.collection,
      description: p.description,
    })),
    ...system.filter((p) => p.name !== 'id'),
  ];
}

/** The thumbnail size the row panel asks for: the app's first `storage.thumbnails` entry when the admin schema says, else the default `100x100`. */
export let thumbSize = '100x100';

/** Reads the model from the server. @throws Error when either document cannot be read */
export async function loadModel(): Promise<Model> {
  const [openapi, adminAnswer] = await Promise.all([call<JsonSchema>('GET', '/_openapi'), call<JsonSchema>('GET', '/_admin/schema')]);
  if (openapi.status !== 200) throw new Error(`GET /api/_openapi answered ${openapi.status}`);
  if (adminAnswer.status !== 200 || !adminAnswer.body || typeof adminAnswer.body !== 'object')
    throw new Error(`GET /api/_admin/schema answered ${adminAnswer.status}`);
  const doc = openapi.body;
  const admin = adminAnswer.body;
  const paths: Record<string, JsonSchema> = doc.paths ?? {};
  const listed = Object.keys(paths)
    .filter((p) => /^\/[^_/{][^/]*$/.test(p) && paths[p].get?.operationId === `list${p.slice(1)}`)
    .map((p) => p.slice(1));
  const names = new Set(listed.filter((n) => doc.components?.schemas?.[`${n}Input`]));
  const resources: Resource[] = listed.map((name) => {
    const ops = paths[`/${name}`];
    const kind: Kind = String(ops.get.summary ?? '').includes('external collection')
      ? 'external'
      : names.has(name)
        ? 'collection'
        : ops.post
          ? 'view'
          : 'query';
    const rowSchema = ops.get.responses?.['200']?.content?.['application/json']?.schema?.properties?.data?.items?.$ref?.split('/').pop() ?? name;
    const props = kind === 'external' ? [] : propsFromOpenApi(doc, rowSchema, names);
    return {
      name,
      kind,
      description: ops.get.description ?? ops.get.summary,
      props,
      search: (ops.get.parameters ?? []).some((p: JsonSchema) => p.name === 'search'),
      children: [],
      writable: kind === 'collection' || kind === 'view',
    };
  });
  enrich(resources, admin);
  const sizes = admin.settings?.storage?.thumbnails;
  if (Array.isArray(sizes) && typeof sizes[0] === 'string') thumbSize = sizes[0];
  const functions: FunctionDef[] = Object.keys(paths)
    .filter((p) => p.startsWith('/_invoke/'))
    .map((p) => p.slice('/_invoke/'.length))
    .map((name) => {
      const path = paths[`/${name}`] ? `/${name}` : `/_invoke/${name}`;
      const operations = METHODS.filter((m) => paths[path][m]).map((m) => {
        const op = paths[path][m];
        return {
          method: m.toUpperCase(),
          path,
          summary: op.summary,
          params: (op.parameters ?? [])
            .map((x: JsonSchema) => deref(doc, x)!)
            .map((x: JsonSchema) => ({ name: x.name, required: x.required === true, schema: x.schema ?? {}, description: x.description })),
          body: deref(doc, op.requestBody?.content?.['application/json']?.schema),
        };
      });
      const definition = (admin.functions ?? []).find((f: any) => f.name === name);
      return { name, description: definition?.description ?? operations[0]?.summary, operations, definition };
    });
  return { resources, functions, openapi: doc, admin };
}

function enrich(resources: Resource[], admin: JsonSchema): void {
  const byName = (list: any[] | undefined, name: string) => (list ?? []).find((d: any) => d.name === name);
  for (const r of resources) {
    const col = byName(admin.collections, r.name);
    const view = byName(admin.views, r.name);
    const query = byName(admin.queries, r.name);
    const ext = byName(admin.externals, r.name);
    r.definition = col ?? view ?? query ?? ext;
    const base = col ?? (view ? byName(admin.collections, view.collection) : undefined);
    if (base && Array.isArray(base.properties)) {
      r.props = fromManifestProps(
        base.properties,
        r.props.filter((p) => SYSTEM.has(p.name)),
      );
      // The admin schema names each child relation's `include` key (DESIGN §9).
      if (Array.isArray(base.children))
        r.children = base.children
          .filter((c: any) => typeof c?.key === 'string' && typeof c?.collection === 'string' && typeof c?.field === 'string')
          .map((c: any) => ({ key: c.key, collection: c.collection, field: c.field }));
      r.search = base.search === true;
    }
  }
}

/** The label a lookup's row is shown by: its `name`, `title`, another short string, or its id. */
export function labelOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'object') return String(value);
  const o = value as Record<string, unknown>;
  for (const k of ['name', 'title', 'username', 'sku', 'label']) if (typeof o[k] === 'string' && o[k]) return o[k] as string;
  return typeof o.id === 'string' ? o.id : JSON.stringify(value);
}

/** A cell's text: lookups by label, blobs by file name, objects as JSON. Always text, never markup. */
export function cellText(prop: Prop | undefined, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (prop?.type === 'lookup') return labelOf(value);
  if (prop?.type === 'blob' && typeof value === 'object') return String((value as { name?: unknown }).name ?? '');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
