/**
 * @module The runtime's public entry point: the only module generated code and the CLI import.
 */
export * from './contract/index.js';
export { HttpError, toErrorBody } from './errors.js';
export type { ErrorBody, ErrorDetail } from './errors.js';
export { startServer, migrateApp, databaseUrlFor, createAppRuntime, type ServeOptions, type RunningServer } from './server.js';
export type { AppRuntime, RequestContext } from './core/context.js';
export { apiClientFor, type ApiClient, type ApiCall, type ApiAnswer, type ApiClientOptions } from './core/api-client.js';
export type { Change, ChangeAction, ChangeSink } from './data/changes.js';
export { ANONYMOUS, type Caller } from './auth/caller.js';
export { StartupError } from './load-manifest.js';
export { diffDatamodels, applyMigrations } from './data/schema-engine-calls.js';
export { migrationStatusInApp, resolveMigrationInApp, discardMigrationInApp, squashMigrationsInApp, type MigrationStatus } from './migrate-commands.js';
export { filterProblems, type FilterProblem } from './query/check-filters.js';
export { uniqueClashes, type UniqueColumn, type UniqueClash, type UniqueClashReport } from './data/unique-clashes.js';
export { ruleBreakers, type StricterColumn, type StricterRule, type RuleBreak, type RuleBreakReport } from './data/rule-breakers.js';
export type {
  FunctionContext,
  FunctionApiClient,
  FunctionRequest,
  FunctionResponse,
  FunctionCaller,
  FunctionQuery,
  ValidationEntry,
  GetParams,
  FunctionRealtime,
  RealtimeJoin,
  RealtimeSend,
  FunctionAgent,
  AgentConnectOptions,
  AgentSessionInfo,
  AgentUiTool,
  FunctionJobs,
  FunctionMail,
  FunctionMailMessage,
  EnqueueOptions,
  TriggerEvent,
} from './functions/context.js';
export { agUiAdapter, type AgUiEvent, type AgentFrame } from './agent/ag-ui.js';
export { creditsInApp } from './agent/credit-commands.js';
export { osloMonth, type CreditState, type CreditChange } from './agent/credits.js';
export { FunctionApiError } from './functions/collection-client.js';
export {
  createUserInApp,
  createServiceAccountInApp,
  deleteIdentityInApp,
  disableIdentityInApp,
  setIdentityRolesInApp,
  setIdentityAdminInApp,
} from './identity-commands.js';
export { listUsersInApp, showUserInApp, type UserSummary } from './user-commands.js';
export { discardJobInApp, listJobsInApp, retryJobsInApp } from './jobs/commands.js';
export type { IdentityRef } from './auth/identities.js';
export { authorize, authorizeRead, type Grant } from './auth/authorize.js';
export { startDevServer, type DevServer, type DevProblem, type DevReload } from './dev-server.js';
