/**
 * @module The runtime's public entry point: the only module generated code and the CLI import.
 */
export * from './contract/index.js';
export { HttpError, toErrorBody } from './errors.js';
export type { ErrorBody, ErrorDetail } from './errors.js';
export { defineCollectionRoutes, defineViewRoutes, type CollectionRoutesDefinition, type ViewRoutesDefinition, type RoutesDefinition } from './http/collection-routes.js';
export { defineQueryRoutes, type QueryRoutesDefinition } from './http/query-routes.js';
export { startServer, migrateApp, databaseUrlFor, type ServeOptions, type RunningServer } from './server.js';
export { StartupError } from './load-manifest.js';
export { diffDatamodels, applyMigrations } from './data/schema-engine.js';
export { filterProblems, type FilterProblem } from './query/check-filters.js';
export type {
  FunctionContext, FunctionRequest, FunctionResponse, FunctionCaller, FunctionQuery, ValidationEntry, GetParams,
} from './functions/context.js';
export { FunctionApiError } from './functions/collection-client.js';
export { createUserInApp, createServiceAccountInApp } from './identity-commands.js';
export { authorize, authorizeRead, type Grant } from './auth/authorize.js';
