/**
 * @module The read-only system fields every collection row has (DESIGN §3): one table of names and
 * types that the generator (name checks, query types, OpenAPI row schemas) and the runtime (filters,
 * select, row decoding) read, so no list of them is written twice.
 */
import type { PropertyType } from './manifest.js';

/** One system field: its name, its property type, whether it may be null, and what it holds. */
export interface SystemField {
  name: 'id' | 'createdAt' | 'updatedAt' | 'createdBy';
  type: PropertyType;
  nullable: boolean;
  description: string;
}

/** The system fields in row order: `id` first, the three bookkeeping columns after the properties. */
export const SYSTEM_FIELDS: readonly SystemField[] = [
  { name: 'id', type: 'guid', nullable: false, description: 'The row id (a GUID, lower-case)' },
  { name: 'createdAt', type: 'date-time', nullable: false, description: 'When the row was created' },
  { name: 'updatedAt', type: 'date-time', nullable: false, description: 'When the row was last written' },
  { name: 'createdBy', type: 'string', nullable: true, description: 'Id of the identity that created the row (null for anonymous writes)' },
];

export type SystemFieldName = SystemField['name'];

/** `id`, `createdAt`, `updatedAt`, `createdBy`: names a property may not use. */
export const SYSTEM_FIELD_NAMES: readonly SystemFieldName[] = SYSTEM_FIELDS.map((f) => f.name);

/** `createdAt`, `updatedAt`, `createdBy`: the system columns besides `id` (query rows have none of them). */
export const SYSTEM_COLUMN_NAMES: readonly SystemFieldName[] = SYSTEM_FIELD_NAMES.filter((n) => n !== 'id');

/** Name → property type (`id` guid, `createdAt`/`updatedAt` date-time, `createdBy` string). */
export const SYSTEM_FIELD_TYPES: Readonly<Record<SystemFieldName, PropertyType>> = Object.fromEntries(SYSTEM_FIELDS.map((f) => [f.name, f.type])) as Record<
  SystemFieldName,
  PropertyType
>;

/** True for the four system field names (case-sensitive, DESIGN §3). */
export function isSystemField(name: string): name is SystemFieldName {
  return (SYSTEM_FIELD_NAMES as readonly string[]).includes(name);
}
