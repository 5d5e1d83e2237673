/**
 * @module Emits `.svc/schema.prisma` from the app model with the type mapping of DESIGN §3:
 * system fields, exact decimals, dates, uuids on PostgreSQL, one foreign key and index per lookup,
 * followed by the system models (users, service accounts, tokens, keys, `_log`) of `system-models.ts`.
 */
import type { AppManifest, Collection, Property, SystemField, SystemFieldName } from '../../runtime/index.js';
import { SYSTEM_FIELDS, typeBehaviour } from '../../runtime/contract/index.js';
import { renderTemplate } from '../render/render-template.js';
import { SYSTEM_MODELS } from './system-models.js';

interface FieldView {
  name: string;
  type: string;
  attributes: string;
}

/** Name of the generated Prisma relation field beside a lookup's scalar column (`customer__ref`). */
export const relationFieldName = (property: string): string => `${property}__ref`;

/** Name of the generated back-relation on a lookup's target (`Order__customer`). */
const backRelationName = (collection: string, property: string): string => `${collection}__${property}`;

const relationName = (collection: string, property: string): string => `${collection}_${property}`;

/** The columns full-text search covers: string and text properties, in declaration order (SPEC §4.2). */
export const searchColumns = (c: Collection): string[] => (c.search ? c.properties.filter((p) => typeBehaviour(p.type).text).map((p) => p.name) : []);

/** The Prisma delegate name the generated client exposes for a model (`OrderLine` → `orderLine`). */
export const delegateName = (model: string): string => model[0].toLowerCase() + model.slice(1);

/** The Prisma scalar and native attribute of a property's column (the type's `prisma`, DESIGN §3). */
function scalarType(p: Property, pg: boolean): { type: string; native: string } {
  const { type, sqlite, postgresql } = typeBehaviour(p.type).prisma;
  return { type, native: pg ? postgresql : sqlite };
}

/** Prisma attributes of the system fields besides their native type. */
const SYSTEM_ATTRIBUTES: Record<SystemFieldName, string> = { id: '@id', createdAt: '@default(now())', updatedAt: '@updatedAt', createdBy: '' };

function systemField(f: SystemField, pg: boolean): FieldView {
  const { type, native } = scalarType({ name: f.name, type: f.type, required: !f.nullable }, pg);
  return { name: f.name, type: type + (f.nullable ? '?' : ''), attributes: [SYSTEM_ATTRIBUTES[f.name], native].filter(Boolean).join(' ') };
}

/** A property's `@default(...)` ('' without one): the type's `prisma.default`, else the value as JSON. */
function defaultAttribute(p: Property): string {
  if (p.default === undefined) return '';
  const own = typeBehaviour(p.type).prisma.default;
  if (own) return own(p.default);
  return typeof p.default === 'string' ? `@default(${JSON.stringify(p.default)})` : `@default(${String(p.default)})`;
}

function propertyFields(c: Collection, p: Property, pg: boolean): FieldView[] {
  const { type, native } = scalarType(p, pg);
  // A blob is optional metadata (set by upload); everything else is NOT NULL exactly when required.
  const optional = p.required && p.type !== 'blob' ? '' : '?';
  const attrs = [defaultAttribute(p), p.unique ? '@unique' : '', native].filter(Boolean).join(' ');
  const fields: FieldView[] = [{ name: p.name, type: type + optional, attributes: attrs }];
  if (p.type === 'lookup') {
    // Required lookups restrict deletion of the target (409); optional ones are cleared (SetNull).
    const onDelete = p.required ? 'Restrict' : 'SetNull';
    fields.push({
      name: relationFieldName(p.name),
      type: `${p.collection}${optional}`,
      attributes: `@relation("${relationName(c.name, p.name)}", fields: [${p.name}], references: [id], onDelete: ${onDelete})`,
    });
  }
  return fields;
}

/**
 * Builds the Prisma schema text for the manifest's provider.
 * @returns schema.prisma source; deterministic for a given manifest
 * Source: DESIGN §3 (property types, system fields), §5 (Prisma 7 `prisma-client` generator).
 */
export function emitPrismaSchema(manifest: AppManifest): string {
  const pg = manifest.provider === 'postgresql';
  const models = manifest.collections.map((c) => {
    const [id, ...bookkeeping] = SYSTEM_FIELDS.map((f) => systemField(f, pg));
    const fields: FieldView[] = [id, ...c.properties.flatMap((p) => propertyFields(c, p, pg)), ...bookkeeping];
    for (const other of manifest.collections) {
      for (const p of other.properties) {
        if (p.type === 'lookup' && p.collection === c.name) {
          fields.push({
            name: backRelationName(other.name, p.name),
            // A unique lookup is one-to-one: Prisma wants the other side singular.
            type: p.unique ? `${other.name}?` : `${other.name}[]`,
            attributes: `@relation("${relationName(other.name, p.name)}")`,
          });
        }
      }
    }
    const indexes = c.properties.filter((p) => p.type === 'lookup').map((p) => p.name);
    // Full-text search is outside Prisma's model: the doc comment records the searched columns in the
    // migration snapshot, so the next migration knows what search objects exist (migrate/search-index.ts).
    const search = searchColumns(c).join(', ');
    return { name: c.name, fields, indexes, search, table: '', width: Math.max(...fields.map((f) => f.name.length)) };
  });
  const system = SYSTEM_MODELS.map((m) => {
    const fields = m.fields.map((f) => ({ name: f.name, type: f.type, attributes: pg ? f.postgresql : f.sqlite }));
    return { name: m.name, fields, indexes: m.indexes, uniques: m.uniques ?? [], table: m.table, width: Math.max(...fields.map((f) => f.name.length)) };
  });
  return renderTemplate('schema.prisma.hbs', { provider: manifest.provider, models: [...models, ...system] });
}
