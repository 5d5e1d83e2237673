/**
 * @module The generator↔runtime contract (DESIGN §2, issue 9): the manifest's types, the settings of
 * svc.json, the system fields, the API's limits, its error codes and statuses, property → JSON Schema,
 * the property-type table (one entry per type: `./property-types.ts`)
 * and the shape of `agent-tools.json`. Plain types, values and functions with no imports outside this
 * folder, so the generator may import it by value (test/architecture.test.ts holds both rules).
 */
export * from './manifest.js';
export * from './settings.js';
export * from './system-fields.js';
export * from './limits.js';
export * from './errors.js';
export * from './property-schema.js';
export * from './property-types.js';
export { DECIMAL_STRING_PATTERN } from './property-values.js';
export * from './agent-tools.js';
