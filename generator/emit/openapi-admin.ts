/**
 * @module OpenAPI paths of the admin endpoints of DESIGN §9 (tag `admin`, docs/console.md "Admin
 * endpoints"): identities, logs, real-time, agent, schema and status. Admin users and admin service
 * accounts only; none is an agent tool (`x-svc-agent: false`).
 */
import type { OpenApiBuilder, OperationObject, ParameterObject, SchemaObject } from 'openapi3-ts/oas31';
import { AGENT_USAGE_MINUTE_KEEP_DAYS, MAX_PAGE_SIZE, type ErrorStatus } from '../../runtime/contract/index.js';
import { errorResponses, json, ref, securityFor } from './openapi-shared.js';

const ADMINS = securityFor(['_AUTHENTICATED_USER']);
const str = (description: string, extra: SchemaObject = {}): SchemaObject => ({ type: 'string', description, ...extra });
const nullable = (type: string, description: string): SchemaObject => ({ type: [type, 'null'] as SchemaObject['type'], description });
const query = (name: string, description: string, schema: SchemaObject = { type: 'string' }, required = false): ParameterObject => ({
  name,
  in: 'query',
  description,
  required,
  schema,
});
const path = (name: string, description: string): ParameterObject => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });

const PAGING: ParameterObject[] = [
  query('pageSize', 'Rows per page (default 50)', { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE }),
  query('pageToken', 'The `nextPageToken` of the previous page'),
];
const RANGE: ParameterObject[] = [
  query('from', 'Start (inclusive): ISO 8601 date-time or epoch ms', { type: 'string' }),
  query('to', 'End (exclusive): ISO 8601 date-time or epoch ms', { type: 'string' }),
];

/** A page of `item`: `{ data, nextPageToken? }`. */
const page = (item: string): SchemaObject => ({
  type: 'object',
  required: ['data'],
  properties: { data: { type: 'array', items: ref(item) }, nextPageToken: str('Present when another page follows: send it as pageToken') },
});

const SCHEMAS: Record<string, SchemaObject> = {
  'svc.AdminIdentity': {
    type: 'object',
    required: ['id', 'kind', 'name', 'roles', 'admin', 'disabled', 'createdAt', 'lastSignInAt'],
    properties: {
      id: str('User or service-account id'),
      kind: { type: 'string', enum: ['user', 'serviceAccount'] },
      name: str("A user's username, a service account's name"),
      roles: { type: 'array', items: { type: 'string' } },
      admin: { type: 'boolean' },
      disabled: { type: 'boolean' },
      createdAt: str('ISO 8601', { format: 'date-time' }),
      lastSignInAt: nullable('string', 'Last password or client-secret sign-in (ISO 8601)'),
      email: nullable('string', 'Users only'),
      clientId: str('Service accounts only'),
      clientSecret: str('Only in the answer to creating a service account: shown once'),
      providers: {
        type: 'array',
        description: 'Users only: the identity providers linked to the user (DESIGN §11), oldest first',
        items: ref('svc.AdminProviderLink'),
      },
    },
  },
  'svc.AdminProviderLink': {
    type: 'object',
    required: ['provider', 'subject', 'email', 'createdAt'],
    properties: {
      provider: str("The provider's name in svc.json auth.providers (google, github, or an OpenID Connect provider)"),
      subject: str("The user's id at the provider"),
      email: nullable('string', 'The address the provider gave when the link was made'),
      createdAt: str('When the link was made (ISO 8601)', { format: 'date-time' }),
    },
  },
  'svc.AdminIdentityCreate': {
    type: 'object',
    properties: {
      kind: { type: 'string', enum: ['user', 'serviceAccount'], default: 'user' },
      username: str('Users: the sign-in name'),
      password: str('Users: at least 8 characters', { format: 'password' }),
      email: str('Users: an e-mail address (counts as verified)'),
      name: str('Service accounts: a name for people'),
      roles: { type: 'array', items: { type: 'string' } },
      admin: { type: 'boolean' },
    },
  },
  'svc.AdminIdentityChange': {
    type: 'object',
    additionalProperties: false,
    properties: {
      disabled: { type: 'boolean' },
      roles: { type: 'array', items: { type: 'string' } },
      admin: { type: 'boolean' },
      password: str('Users only: the new password', { format: 'password' }),
    },
  },
  'svc.AdminSession': {
    type: 'object',
    properties: {
      familyId: str('The refresh-token family'),
      clientId: str('The client it was issued to'),
      startedAt: str('Sign-in', { format: 'date-time' }),
      lastUsedAt: str('Last refresh', { format: 'date-time' }),
      expiresAt: str('When the family expires', { format: 'date-time' }),
      active: { type: 'boolean', description: 'A live token of the family remains' },
    },
  },
  'svc.AdminLogEntry': {
    type: 'object',
    properties: {
      id: str('Entry id (time-ordered)'),
      time: str('ISO 8601', { format: 'date-time' }),
      instance: str('The instance that wrote it'),
      kind: { type: 'string', enum: ['request', 'client', 'function'] },
      reqId: nullable('string', 'The request id'),
      method: nullable('string', 'Requests'),
      path: nullable('string', 'Requests: path and query, secret values redacted'),
      status: nullable('integer', 'Requests'),
      durationMs: nullable('number', 'Requests'),
      identityId: nullable('string', 'The caller'),
      identityKind: nullable('string', 'anonymous, user or serviceAccount'),
      severity: nullable('integer', 'client and function entries: 0 fatal … 5 trace'),
      source: nullable('string', 'function entries: the function'),
      message: nullable('string', 'client and function entries'),
    },
  },
  'svc.AdminSeries': {
    type: 'object',
    properties: {
      from: str('ISO 8601'),
      to: str('ISO 8601'),
      step: { type: 'integer', description: 'Seconds per step' },
      data: { type: 'array', items: { type: 'object', additionalProperties: true } },
    },
  },
  'svc.AdminAgentUsage': {
    type: 'object',
    required: ['from', 'to', 'step', 'data'],
    properties: {
      from: str('ISO 8601'),
      to: str('ISO 8601'),
      step: { type: 'integer', description: 'Seconds per step (a multiple of 60)' },
      data: {
        type: 'array',
        description: 'One entry per step from the step holding from to the last step starting before to, oldest first',
        items: {
          type: 'object',
          required: ['time', 'credits', 'turns', 'bySource'],
          properties: {
            time: str('Start of the step (ISO 8601, UTC; steps are aligned to the epoch)'),
            credits: { type: 'integer', description: 'All credits charged in the step: turns, ask and compact' },
            turns: { type: 'integer', description: 'Thread turns charged in the step' },
            bySource: {
              type: 'object',
              description: 'The step’s credits per source',
              required: ['turn', 'ask', 'compact'],
              properties: {
                turn: { type: 'integer', description: 'Credits of thread turns' },
                ask: { type: 'integer', description: 'Credits of ctx.agent.ask completions' },
                compact: { type: 'integer', description: 'Credits of compact summaries' },
              },
            },
          },
        },
      },
    },
  },
  'svc.AdminAgentSession': {
    type: 'object',
    required: ['identityId', 'instance', 'channel', 'state', 'threadId', 'startedAt', 'sessionCredits', 'sessionCreditsUsed', 'mcp'],
    properties: {
      identityId: str('The user or service account whose session it is'),
      instance: str('The instance running it (its lease holder)'),
      channel: nullable('string', 'The session channel as it appears on the socket'),
      state: nullable('string', 'starting, idle, busy or stopped (as of the last renewal, at most 5 s old)'),
      threadId: nullable('string', 'The current thread'),
      startedAt: nullable('string', 'ISO 8601'),
      sessionCredits: { type: 'integer', description: 'The session credit limit (0 = none)' },
      sessionCreditsUsed: { type: 'integer', description: 'Credits the session counter has used' },
      mcp: {
        type: 'array',
        description: 'The session’s MCP servers in agent.mcpServers order, as the instance running it last recorded them (on every change, and every 5 s)',
        items: ref('svc.AdminMcpStatus'),
      },
    },
  },
  'svc.AdminMcpStatus': {
    type: 'object',
    required: ['name', 'status'],
    properties: {
      name: str('The server’s name in agent.mcpServers'),
      status: { type: 'string', enum: ['connecting', 'connected', 'reconnecting', 'failed'], description: 'As mcp-list and mcp-status report it (SPEC §6.3)' },
    },
  },
  'svc.AdminMcpServer': {
    type: 'object',
    required: ['name', 'transport', 'timeoutMs', 'usable'],
    properties: {
      name: str('The server’s name in agent.mcpServers'),
      transport: { type: 'string', enum: ['http', 'stdio'], description: 'http: Streamable HTTP (url); stdio: a child process (command)' },
      timeoutMs: { type: 'integer', description: 'Most milliseconds one tool call may take' },
      usable: { type: 'boolean', description: 'false when a ${secrets}/${env} reference is unset or the url is not http(s): every session lists it failed' },
    },
  },
  'svc.AdminObject': { type: 'object', additionalProperties: true },
};

const op = (
  operationId: string,
  summary: string,
  response: string | SchemaObject,
  extra: Partial<OperationObject> = {},
  errors: ErrorStatus[] = [400, 401, 403],
): OperationObject => ({
  operationId,
  tags: ['admin'],
  summary,
  security: ADMINS,
  responses: {
    200: { description: 'OK', content: json(typeof response === 'string' ? ref(response) : response) },
    ...errorResponses(...errors),
  },
  'x-svc-resource': '_admin',
  'x-svc-agent': false,
  ...extra,
});

const noContent = (operationId: string, summary: string, parameters: ParameterObject[]): OperationObject => ({
  operationId,
  tags: ['admin'],
  summary,
  security: ADMINS,
  parameters,
  responses: { 204: { description: 'Done' }, ...errorResponses(401, 403, 404) },
  'x-svc-resource': '_admin',
  'x-svc-agent': false,
});

/** Every `/_admin/*` path. */
export function adminOpenApi(builder: OpenApiBuilder): void {
  for (const [name, schema] of Object.entries(SCHEMAS)) builder.addSchema(name, schema);
  builder.addTag({ name: 'admin', description: 'The console’s endpoints (DESIGN §9): admin users and admin service accounts only.' });
  const id = path('id', 'User or service-account id');
  builder.addPath('/_admin/identities', {
    get: op('svc_adminListIdentities', 'Users and service accounts, oldest first', page('svc.AdminIdentity'), {
      parameters: [
        query('q', 'Search in names, e-mail addresses and client ids'),
        query('kind', 'user or serviceAccount', { type: 'string', enum: ['user', 'serviceAccount'] }),
        ...PAGING,
      ],
    }),
    post: op('svc_adminCreateIdentity', 'Creates a user, or a service account (its secret is in this answer only)', 'svc.AdminIdentity', {
      requestBody: { required: true, content: json(ref('svc.AdminIdentityCreate')) },
      responses: { 201: { description: 'Created', content: json(ref('svc.AdminIdentity')) }, ...errorResponses(400, 401, 403, 409) },
    }),
  });
  builder.addPath('/_admin/identities/{id}', {
    get: op(
      'svc_adminGetIdentity',
      "One user or service account, with a user's linked providers",
      'svc.AdminIdentity',
      { parameters: [id] },
      [400, 401, 403, 404],
    ),
    patch: op(
      'svc_adminChangeIdentity',
      'Disables or enables, sets roles, admin or a password; in effect within 5 s everywhere',
      'svc.AdminIdentity',
      {
        parameters: [id],
        requestBody: { required: true, content: json(ref('svc.AdminIdentityChange')) },
      },
      [400, 401, 403, 404],
    ),
    delete: noContent('svc_adminDeleteIdentity', 'Deletes the identity and its refresh tokens', [id]),
  });
  builder.addPath('/_admin/identities/{id}/sessions', {
    get: op(
      'svc_adminListSessions',
      'The refresh-token families of an identity, most recently used first',
      page('svc.AdminSession'),
      { parameters: [id, ...PAGING] },
      [400, 401, 403, 404],
    ),
  });
  builder.addPath('/_admin/identities/{id}/sessions/{familyId}', {
    delete: noContent('svc_adminRevokeSession', 'Revokes a refresh-token family (its access tokens live until they expire)', [
      id,
      path('familyId', 'The family'),
    ]),
  });
  builder.addPath('/_admin/logs', {
    get: op('svc_adminLogs', 'Log entries, newest first', page('svc.AdminLogEntry'), {
      parameters: [
        ...RANGE,
        query('status', 'A status (404) or a class (4xx, 5xx)'),
        query('method', 'HTTP method'),
        query('path', 'Path prefix, e.g. /api/Order'),
        query('identity', 'Identity id'),
        query('reqId', 'Request id'),
        query('kind', 'request, client or function', { type: 'string', enum: ['request', 'client', 'function'] }),
        ...PAGING,
      ],
    }),
  });
  builder.addPath('/_admin/logs/stats', {
    get: op('svc_adminLogStats', 'Requests, errors (5xx) and client errors (4xx) per step (default: the last hour per minute)', 'svc.AdminSeries', {
      parameters: [...RANGE, query('step', 'Seconds per step (default 60)', { type: 'integer', minimum: 1 })],
    }),
  });
  // Background jobs (DESIGN §12), as `svc jobs` shows them.
  const jobId = path('id', 'Job id');
  builder.addPath('/_admin/jobs', {
    get: op('svc_adminJobs', 'Jobs, newest first, with the counts ({ data, stats })', 'svc.AdminObject', {
      parameters: [
        query('state', 'pending, running or failed', { type: 'string', enum: ['pending', 'running', 'failed'] }),
        query('task', 'svc_trigger, svc_function or svc_schedule', { type: 'string', enum: ['svc_trigger', 'svc_function', 'svc_schedule'] }),
        query('limit', 'At most this many (default 100)', { type: 'integer', minimum: 1, maximum: 1000 }),
      ],
    }),
  });
  builder.addPath('/_admin/jobs/retry-failed', {
    post: op('svc_adminRetryFailedJobs', 'Makes every failed job due now with its attempts reset ({ retried })', 'svc.AdminObject', {}, [401, 403]),
  });
  builder.addPath('/_admin/jobs/{id}', {
    get: op('svc_adminGetJob', 'One job', 'svc.AdminObject', { parameters: [jobId] }, [401, 403, 404]),
    delete: noContent('svc_adminDiscardJob', 'Removes a pending or failed job (409 while it runs)', [jobId]),
  });
  builder.addPath('/_admin/jobs/{id}/retry', {
    post: op(
      'svc_adminRetryJob',
      'Makes a job due now with its attempts reset (409 while it runs)',
      'svc.AdminObject',
      { parameters: [jobId] },
      [401, 403, 404, 409],
    ),
  });
  builder.addPath('/_admin/realtime', {
    get: op('svc_adminRealtime', 'Connections per instance and channels with their member counts', 'svc.AdminObject', {}, [401, 403]),
  });
  builder.addPath('/_admin/agent/sessions', {
    get: op('svc_adminAgentSessions', 'Running agent sessions on every instance, with their MCP server statuses', page('svc.AdminAgentSession'), {
      parameters: PAGING,
    }),
  });
  builder.addPath('/_admin/agent/mcp-servers', {
    get: op(
      'svc_adminAgentMcpServers',
      'The MCP servers configured in agent.mcpServers: name, transport, time limit (no URL, header, argument or environment value)',
      { type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('svc.AdminMcpServer') } } },
      {},
      [401, 403],
    ),
  });
  builder.addPath('/_admin/agent/threads', {
    get: op('svc_adminAgentThreads', "An identity's agent threads, most recent first", page('svc.AdminObject'), {
      parameters: [query('identity', 'Identity id', { type: 'string' }, true), ...PAGING],
    }),
  });
  builder.addPath('/_admin/agent/threads/{id}', {
    get: op(
      'svc_adminAgentThread',
      'A thread’s transcript: turns with their items (text, tool calls, MCP calls, errors) and credits',
      'svc.AdminObject',
      {
        parameters: [path('id', 'Thread id')],
      },
      [401, 403, 404],
    ),
  });
  builder.addPath('/_admin/agent/usage', {
    get: op(
      'svc_adminAgentUsage',
      'Agent credits charged per step and source: turns, ask, compact (default: the last 30 days per day)',
      'svc.AdminAgentUsage',
      {
        parameters: [
          ...RANGE,
          query(
            'step',
            `Seconds per step, a multiple of 60 (default 86400); a step that is not whole hours reaches back ${AGENT_USAGE_MINUTE_KEEP_DAYS} days`,
            {
              type: 'integer',
              minimum: 60,
              maximum: 31 * 86_400,
              multipleOf: 60,
            },
          ),
        ],
      },
    ),
  });
  builder.addPath('/_admin/schema', { get: op('svc_adminSchema', 'The app manifest without secret values', 'svc.AdminObject', {}, [401, 403]) });
  builder.addPath('/_admin/status', {
    get: op('svc_adminStatus', 'Readiness detail, migrations applied and pending, svc version, instances seen', 'svc.AdminObject', {}, [401, 403]),
  });
}
