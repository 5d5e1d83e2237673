/**
 * @module OpenAPI paths of the service endpoints: authentication (SPEC §4.6, §5; DESIGN §4 "Auth bodies"
 * and "Auth details"), the client log (SPEC §2 "Client log event", §4.9) and this document. The hosted
 * login page `/login` lives outside `/api` and is not described here. Component names start with
 * `svc.` so they never meet a collection's.
 */
import type { OpenApiBuilder, SchemaObject } from 'openapi3-ts/oas31';
import { errorResponses, json, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

const NO_CREDENTIALS: never[] = [];
const AUTHENTICATED = securityFor(['_AUTHENTICATED_USER']);
const FORM = 'application/x-www-form-urlencoded';

const SCHEMAS: Record<string, SchemaObject> = {
  'svc.AuthRequest': {
    oneOf: [
      {
        type: 'object',
        required: ['authority', 'clientId', 'clientSecret'],
        properties: {
          authority: { type: 'string', description: '`serviceaccount` for a service account' },
          clientId: { type: 'string' },
          clientSecret: { type: 'string' },
        },
      },
      {
        type: 'object',
        required: ['authority', 'username', 'password'],
        properties: { authority: { type: 'string', enum: ['password'] }, username: { type: 'string' }, password: { type: 'string' } },
      },
      {
        type: 'object',
        required: ['authority', 'idToken'],
        description: 'A native client signs in with an ID token of an OpenID Connect provider of svc.json auth.providers (DESIGN §11)',
        properties: {
          authority: { type: 'string', description: 'The name of the provider (a key of svc.json auth.providers)' },
          idToken: { type: 'string', description: "The provider's ID token: its signature, iss, aud (the client id) and exp are checked" },
        },
      },
    ],
  },
  'svc.TokenRequest': {
    description: 'OAuth 2.0 token request (RFC 6749 §4.4 client_credentials, §6 refresh_token)',
    oneOf: [
      {
        type: 'object',
        required: ['grant_type', 'client_id', 'client_secret'],
        properties: { grant_type: { type: 'string', enum: ['client_credentials'] }, client_id: { type: 'string' }, client_secret: { type: 'string' } },
      },
      {
        type: 'object',
        required: ['grant_type', 'client_id', 'refresh_token'],
        properties: { grant_type: { type: 'string', enum: ['refresh_token'] }, client_id: { type: 'string' }, refresh_token: { type: 'string' } },
      },
    ],
  },
  'svc.TokenResponse': {
    type: 'object',
    required: ['access_token', 'token_type', 'expires_in', 'refresh_token'],
    properties: {
      access_token: { type: 'string', description: 'JWT; send as `Authorization: Bearer <access_token>`' },
      token_type: { type: 'string', enum: ['Bearer'] },
      expires_in: { type: 'integer', description: 'Seconds until the access token expires' },
      refresh_token: { type: 'string', description: 'For `grant_type=refresh_token` (70 days)' },
    },
  },
  'svc.OAuthError': {
    type: 'object',
    required: ['error'],
    description: 'RFC 6749 §5.2 error body',
    properties: {
      error: { type: 'string', enum: ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type'] },
      error_description: { type: 'string' },
    },
  },
  'svc.RefreshResponse': {
    type: 'object',
    required: ['expires_in'],
    properties: { expires_in: { type: 'integer', description: 'Seconds until the new access cookie expires' } },
  },
  'svc.Me': {
    type: 'object',
    required: ['id', 'username', 'roles'],
    properties: {
      id: { type: 'string', description: 'The identity id (`me()` in filters, `createdBy` of rows)' },
      username: { type: 'string' },
      roles: { type: 'array', items: { type: 'string' } },
    },
  },
  'svc.WebAppConfig': {
    type: 'object',
    required: ['loginUrl', 'loginMethods'],
    additionalProperties: true,
    properties: { loginUrl: { type: 'string', description: 'The hosted login page (`/login`)' }, loginMethods: { type: 'array', items: { type: 'string' } } },
  },
  'svc.ClientLogEvent': {
    type: 'object',
    required: ['message'],
    properties: {
      message: { type: 'string', description: 'Log text' },
      severity: { type: 'integer', minimum: 0, maximum: 5, default: 3, description: '0 Fatal, 1 Error, 2 Warning, 3 Info, 4 Debug, 5 Trace' },
    },
  },
};

const ext = (resource: string, agent = false): SvcOperationExtensions => ({ 'x-svc-resource': resource, ...(!agent && { 'x-svc-agent': false as const }) });
const oauthError = (description: string) => ({ description, content: json(ref('svc.OAuthError')) });

/** `/_auth`, `/_token`, `/_refresh`, `/_logout`, `/_me`, `/_webAppConfig` (tag `auth`). */
export function authOpenApi(builder: OpenApiBuilder): void {
  for (const [name, schema] of Object.entries(SCHEMAS)) builder.addSchema(name, schema);
  builder.addTag({ name: 'auth', description: 'Sign-in, tokens and the current user. The hosted login page is `/login`, outside `/api`.' });
  const tokenBody = { required: true, content: { [FORM]: { schema: ref('svc.TokenRequest') }, ...json(ref('svc.TokenRequest')) } };
  builder.addPath('/_auth', {
    post: {
      operationId: 'svc_auth',
      tags: ['auth'],
      summary: 'Sign in (browser-oriented): answers tokens and sets the access and refresh cookies',
      security: NO_CREDENTIALS,
      requestBody: { required: true, content: json(ref('svc.AuthRequest')) },
      responses: { 200: { description: 'Tokens (cookies are set too)', content: json(ref('svc.TokenResponse')) }, ...errorResponses(400, 401, 403, 429, 502) },
      ...ext('_auth'),
    },
  });
  builder.addPath('/_token', {
    post: {
      operationId: 'svc_token',
      tags: ['auth'],
      summary: 'OAuth 2.0 token endpoint (form-encoded or JSON body); never sets cookies',
      security: NO_CREDENTIALS,
      requestBody: tokenBody,
      responses: {
        200: { description: 'Tokens', content: json(ref('svc.TokenResponse')) },
        400: oauthError('Malformed request, unknown grant type or invalid refresh token'),
        401: oauthError('Unknown client or wrong secret'),
      },
      ...ext('_token'),
    },
  });
  builder.addPath('/_refresh', {
    post: {
      operationId: 'svc_refresh',
      tags: ['auth'],
      summary: 'Renews the access cookie from the refresh cookie',
      security: NO_CREDENTIALS,
      responses: { 200: { description: 'Renewed', content: json(ref('svc.RefreshResponse')) }, ...errorResponses(401) },
      ...ext('_refresh'),
    },
  });
  builder.addPath('/_logout', {
    post: {
      operationId: 'svc_logout',
      tags: ['auth'],
      summary: 'Clears the session cookies',
      security: NO_CREDENTIALS,
      responses: { 204: { description: 'Signed out' }, ...errorResponses(500) },
      ...ext('_logout'),
    },
  });
  builder.addPath('/_me', {
    get: {
      operationId: 'svc_me',
      tags: ['auth'],
      summary: 'The current user',
      security: AUTHENTICATED,
      responses: { 200: { description: 'The current user', content: json(ref('svc.Me')) }, ...errorResponses(401) },
      ...ext('_me', true),
    },
  });
  builder.addPath('/_webAppConfig', {
    get: {
      operationId: 'svc_webAppConfig',
      tags: ['auth'],
      summary: 'Authentication configuration of the web app',
      security: NO_CREDENTIALS,
      responses: { 200: { description: 'Login methods and the login URL', content: json(ref('svc.WebAppConfig')) }, ...errorResponses(500) },
      ...ext('_webAppConfig'),
    },
  });
}

/** `POST /_log` (tag `meta`): a batch of client log events; always requires authentication (SPEC §5.6). */
export function logOpenApi(builder: OpenApiBuilder): void {
  builder.addPath('/_log', {
    post: {
      operationId: 'svc_log',
      tags: ['meta'],
      summary: 'Writes client log events (the caller is attached to each)',
      security: AUTHENTICATED,
      requestBody: { required: true, content: json({ type: 'array', items: ref('svc.ClientLogEvent') }) },
      // 429: the limits per identity of svc.json logs.clientLog (docs/console.md).
      responses: { 200: { description: 'Logged' }, ...errorResponses(400, 401, 429) },
      ...ext('_log'),
    },
  });
}

/** `GET /_openapi` (tag `meta`): this document. */
export function metaOpenApi(builder: OpenApiBuilder): void {
  builder.addTag({ name: 'meta', description: 'Service endpoints' });
  builder.addPath('/_openapi', {
    get: {
      operationId: 'svc_openapi',
      tags: ['meta'],
      summary: 'This document',
      security: NO_CREDENTIALS,
      responses: { 200: { description: 'The OpenAPI document', content: json({ type: 'object' }) }, ...errorResponses(500) },
      ...ext('_openapi'),
    },
  });
}

const CREDIT_STATE: SchemaObject = {
  type: 'object',
  required: ['mode', 'credits', 'monthlyCap', 'monthUsed', 'paused'],
  properties: {
    mode: { type: 'string', enum: ['business', 'self-serve'] },
    credits: { type: 'integer', description: 'business: credits consumed so far; self-serve: the balance left (100,000 credits = 1 USD)' },
    monthlyCap: { type: ['integer', 'null'], description: 'Credits per Europe/Oslo month before agent turns and ask pause; null = no cap' },
    monthUsed: { type: 'integer', description: 'Credits consumed in the current Europe/Oslo month' },
    paused: { type: 'boolean', description: 'Agent turns and ask are refused (the rest of the API keeps serving)' },
  },
};

const CREDIT_CHANGE: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  properties: {
    addBalance: { type: 'integer', minimum: 1, description: 'Credits added to the balance' },
    monthlyCap: { type: ['integer', 'null'], minimum: 0, description: 'The new monthly cap, or null for none' },
    paused: { type: 'boolean', description: 'false lifts a pause; true pauses agent turns and ask' },
  },
};

/** An agent upload as `POST /_agent/uploads` answers it (DESIGN §7a). */
const AGENT_UPLOAD: SchemaObject = {
  type: 'object',
  required: ['uploadId', 'name', 'type', 'size'],
  properties: {
    uploadId: { type: 'string', format: 'uuid', description: 'Name it in a message: attachments: [{ uploadId }]' },
    name: { type: 'string', description: 'The file name of the part' },
    type: { type: 'string', description: 'The type sniffed from the bytes (image/png, image/jpeg, image/webp, image/gif, application/pdf, text/plain)' },
    size: { type: 'integer', description: 'Bytes' },
  },
};

/**
 * `GET`/`PATCH /_agent/credits` (tag `agent`, DESIGN §7): admin service accounts only; `/_agent/uploads`
 * (DESIGN §7a): attachments of agent messages, signed-in callers. Never agent tools.
 */
export function agentOpenApi(builder: OpenApiBuilder): void {
  builder.addSchema('svc.CreditState', CREDIT_STATE);
  builder.addSchema('svc.CreditChange', CREDIT_CHANGE);
  builder.addSchema('svc.AgentUpload', AGENT_UPLOAD);
  builder.addTag({ name: 'agent', description: 'The embedded agent: its credits (admin service accounts only) and the attachments of its messages' });
  builder.addPath('/_agent/uploads', {
    post: {
      operationId: 'svc_uploadAgentAttachment',
      tags: ['agent'],
      summary: "Upload a file for an agent message (the caller's own identity)",
      description:
        'One file part named "file" (multipart/form-data). The type is sniffed from the bytes and must be in svc.json agent.attachments.types; ' +
        'the size is limited by agent.attachments.maxBytes. For large files, tus 1.0 is served at /_agent/uploads/tus.',
      security: AUTHENTICATED,
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: { type: 'object', properties: { file: { type: 'string', format: 'binary', description: 'The file' } }, required: ['file'] },
          },
        },
      },
      responses: { 201: { description: 'The stored upload', content: json(ref('svc.AgentUpload')) }, ...errorResponses(400, 401, 413, 415) },
      ...ext('_agent'),
    },
  });
  builder.addPath('/_agent/uploads/{uploadId}', {
    parameters: [{ name: 'uploadId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
    get: {
      operationId: 'svc_downloadAgentAttachment',
      tags: ['agent'],
      summary: 'Download an agent attachment: through the signed url of history (v, exp, sig; no credentials), or as its owner',
      security: [...AUTHENTICATED, {}],
      responses: {
        200: { description: 'The file, with its sniffed type', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
        ...errorResponses(401, 403, 404),
      },
      ...ext('_agent'),
    },
    delete: {
      operationId: 'svc_deleteAgentAttachment',
      tags: ['agent'],
      summary: 'Take back an upload no message used yet (a used one goes with its thread: 409)',
      security: AUTHENTICATED,
      responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 404, 409) },
      ...ext('_agent'),
    },
  });
  builder.addPath('/_agent/credits', {
    get: {
      operationId: 'svc_getAgentCredits',
      tags: ['agent'],
      summary: 'The agent credit state (admin service accounts only)',
      security: AUTHENTICATED,
      responses: { 200: { description: 'The credit state', content: json(ref('svc.CreditState')) }, ...errorResponses(401, 403) },
      ...ext('_agent'),
    },
    patch: {
      operationId: 'svc_updateAgentCredits',
      tags: ['agent'],
      summary: 'Adds credits, sets the monthly cap, or pauses and resumes agent turns (admin service accounts only)',
      security: AUTHENTICATED,
      requestBody: { required: true, content: json(ref('svc.CreditChange')) },
      responses: { 200: { description: 'The new credit state', content: json(ref('svc.CreditState')) }, ...errorResponses(400, 401, 403) },
      ...ext('_agent'),
    },
  });
}
