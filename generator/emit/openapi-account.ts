/**
 * @module OpenAPI paths of the account endpoints of DESIGN §11 (tag `account`): sign-up, e-mail
 * verification, password reset, changing one's password and deleting one's account. None is an
 * agent tool (`x-svc-agent: false`). The pages under `/login` are outside `/api` and not described.
 */
import type { OpenApiBuilder, SchemaObject } from 'openapi3-ts/oas31';
import { errorResponses, json, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

const NO_CREDENTIALS: never[] = [];
const AUTHENTICATED = securityFor(['_AUTHENTICATED_USER']);
const str = (description: string, extra: SchemaObject = {}): SchemaObject => ({ type: 'string', description, ...extra });

const SCHEMAS: Record<string, SchemaObject> = {
  'svc.SignupRequest': {
    type: 'object',
    required: ['username', 'password'],
    properties: {
      username: str('Unique sign-in name', { maxLength: 200 }),
      password: str('At least 8 characters', { minLength: 8, format: 'password' }),
      email: str('Required when svc.json auth.signup.requireEmailVerification is on (the default); unique case-insensitively', { format: 'email' }),
    },
  },
  'svc.SignupResponse': { type: 'object', required: ['id'], properties: { id: str('The new user id') } },
  'svc.TokenOnly': { type: 'object', required: ['token'], properties: { token: str('The code of the mail (from its link)') } },
  'svc.PasswordResetRequest': { type: 'object', required: ['email'], properties: { email: str('The address of the account', { format: 'email' }) } },
  'svc.PasswordResetConfirm': {
    type: 'object',
    required: ['token', 'password'],
    properties: { token: str('The code of the reset mail'), password: str('The new password (at least 8 characters)', { minLength: 8, format: 'password' }) },
  },
  'svc.PasswordChange': {
    type: 'object',
    required: ['current', 'password'],
    properties: {
      current: str('The current password', { format: 'password' }),
      password: str('The new password (at least 8 characters)', { minLength: 8, format: 'password' }),
    },
  },
  'svc.PasswordOnly': { type: 'object', required: ['password'], properties: { password: str('The current password', { format: 'password' }) } },
};

const ext = (resource: string): SvcOperationExtensions => ({ 'x-svc-resource': resource, 'x-svc-agent': false });
const body = (schema: string) => ({ required: true, content: json(ref(schema)) });

/** `/_signup`, `/_verify-email`, `/_password-reset`, `/_password-reset/confirm`, `/_me/password`, `DELETE /_me`. */
export function accountOpenApi(builder: OpenApiBuilder): void {
  for (const [name, schema] of Object.entries(SCHEMAS)) builder.addSchema(name, schema);
  builder.addTag({ name: 'account', description: 'Sign-up, e-mail verification, password reset and the own account (docs/auth.md).' });
  builder.addPath('/_signup', {
    post: {
      operationId: 'svc_signup',
      tags: ['account'],
      summary: 'Creates an account (svc.json auth.signup.enabled); an address already in use answers like success and mails its owner',
      security: NO_CREDENTIALS,
      requestBody: body('svc.SignupRequest'),
      responses: {
        201: { description: 'Created; a verification mail is sent', content: json(ref('svc.SignupResponse')) },
        ...errorResponses(400, 403, 409, 429),
      },
      ...ext('_signup'),
    },
  });
  builder.addPath('/_verify-email', {
    post: {
      operationId: 'svc_verifyEmail',
      tags: ['account'],
      summary: 'Confirms an e-mail address with the code of its verification mail (valid 24 hours, once)',
      security: NO_CREDENTIALS,
      requestBody: body('svc.TokenOnly'),
      responses: { 204: { description: 'Verified' }, ...errorResponses(400, 429) },
      ...ext('_verify-email'),
    },
  });
  builder.addPath('/_password-reset', {
    post: {
      operationId: 'svc_passwordReset',
      tags: ['account'],
      summary: 'Mails a reset link when the address has an account; always 202',
      security: NO_CREDENTIALS,
      requestBody: body('svc.PasswordResetRequest'),
      responses: { 202: { description: 'Accepted (whether or not the address has an account)' }, ...errorResponses(400, 429) },
      ...ext('_password-reset'),
    },
  });
  builder.addPath('/_password-reset/confirm', {
    post: {
      operationId: 'svc_passwordResetConfirm',
      tags: ['account'],
      summary: 'Sets a new password with the code of a reset mail (valid 1 hour, once); every session of the user ends',
      security: NO_CREDENTIALS,
      requestBody: body('svc.PasswordResetConfirm'),
      responses: { 204: { description: 'Password changed' }, ...errorResponses(400, 429) },
      ...ext('_password-reset/confirm'),
    },
  });
  builder.addPath('/_me/password', {
    post: {
      operationId: 'svc_changePassword',
      tags: ['account'],
      summary: "Changes the signed-in user's password; every refresh token of the user is revoked",
      security: AUTHENTICATED,
      requestBody: body('svc.PasswordChange'),
      responses: { 204: { description: 'Password changed' }, ...errorResponses(400, 401, 403, 429) },
      ...ext('_me/password'),
    },
  });
  builder.addPath('/_me', {
    delete: {
      operationId: 'svc_deleteMe',
      tags: ['account'],
      summary: "Deletes the signed-in user's account (rows they created keep createdBy); their sessions end",
      security: AUTHENTICATED,
      requestBody: body('svc.PasswordOnly'),
      responses: { 204: { description: 'Deleted' }, ...errorResponses(400, 401, 403, 429) },
      ...ext('_me'),
    },
  });
}
