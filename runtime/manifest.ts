/**
 * @module The app model's types, kept at this path for existing imports; they are defined in
 * `runtime/contract/` (the one home of the generator↔runtime contract).
 */
export * from './contract/manifest.js';
export * from './contract/settings.js';
export { SYSTEM_FIELDS, SYSTEM_FIELD_NAMES, SYSTEM_FIELD_TYPES, isSystemField, type SystemField, type SystemFieldName } from './contract/system-fields.js';
