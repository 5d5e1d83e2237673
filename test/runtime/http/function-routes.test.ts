/**
 * The access step of function routes (SPEC §4.8 rule 1, §7; DESIGN §3, §4 "Auth details") with constructed
 * callers: methods outside the function type → 405, an allowed role passes, anonymous refused → 401,
 * authenticated refused → 403 (a POST to a function whose allow-list has only GET included).
 * Over HTTP every caller is anonymous until authentication lands; the e2e suite covers the 401 path.
 */
import { describe, expect, test } from 'vitest';
import { ANONYMOUS, type Caller } from '../../../dist/runtime/auth/caller.js';
import { HttpError } from '../../../dist/runtime/errors.js';
import { checkFunctionAccess, secretsFromEnv } from '../../../dist/runtime/http/function-routes.js';
import type { FunctionDefinition } from '../../../dist/runtime/manifest.js';

const fn = (functionTypeId: 1 | 2, access: Record<string, string[]>): FunctionDefinition => ({
  name: 'f',
  enabled: true,
  functionTypeId,
  endpoint: '/f',
  queryParams: [],
  requestBody: [],
  responseFields: [],
  access,
  module: 'functions/f.js',
});
const user = (roles: string[] = []): Caller => ({ kind: 'user', id: '0190aaaa-0000-7000-8000-000000000001', username: 'ada', roles, admin: false });
const admin: Caller = { kind: 'serviceAccount', id: '0190aaaa-0000-7000-8000-000000000002', username: 'ops', roles: [], admin: true };

/** The status the access step answers, or 200 when it lets the call through. */
function statusOf(f: FunctionDefinition, method: string, caller: Caller): number {
  try {
    checkFunctionAccess(f, method, caller);
    return 200;
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    return (err as HttpError).status;
  }
}

describe('checkFunctionAccess', () => {
  const getOnly = fn(2, { GET: ['_ANONYMOUS_USER'] });
  const members = fn(2, { GET: ['_AUTHENTICATED_USER'], POST: ['editor'], PUT: ['editor'], DELETE: ['admin'] });
  test.each<[string, { f: FunctionDefinition; method: string; caller: Caller; want: number }]>([
    ['GET allowed to anonymous', { f: getOnly, method: 'GET', caller: ANONYMOUS, want: 200 }],
    ['GET allowed to anonymous admits users too', { f: getOnly, method: 'GET', caller: user(), want: 200 }],
    ['POST with only GET allowed, anonymous → 401', { f: getOnly, method: 'POST', caller: ANONYMOUS, want: 401 }],
    ['POST with only GET allowed, authenticated → 403', { f: getOnly, method: 'POST', caller: user(['editor']), want: 403 }],
    ['authenticated-only GET, anonymous → 401', { f: members, method: 'GET', caller: ANONYMOUS, want: 401 }],
    ['authenticated-only GET, user', { f: members, method: 'GET', caller: user(), want: 200 }],
    ['custom role held', { f: members, method: 'PUT', caller: user(['editor']), want: 200 }],
    ['custom role not held → 403', { f: members, method: 'POST', caller: user(['viewer']), want: 403 }],
    ['admin service account bypasses rules', { f: members, method: 'DELETE', caller: admin, want: 200 }],
    ['type 1 does not serve PUT → 405', { f: fn(1, { PUT: ['_ANONYMOUS_USER'] }), method: 'PUT', caller: ANONYMOUS, want: 405 }],
    ['type 1 does not serve DELETE → 405', { f: fn(1, {}), method: 'DELETE', caller: admin, want: 405 }],
    ['PATCH is served by no function type → 405', { f: members, method: 'PATCH', caller: admin, want: 405 }],
    ['type 1 POST allowed', { f: fn(1, { POST: ['_AUTHENTICATED_USER'] }), method: 'POST', caller: user(), want: 200 }],
  ])('%s', (_title, { f, method, caller, want }) => expect(statusOf(f, method, caller)).toBe(want));

  test('a refusal names the method and the function', () => {
    expect(() => checkFunctionAccess(getOnly, 'POST', user())).toThrow('POST on function f is not allowed for this caller');
    expect(() => checkFunctionAccess(getOnly, 'POST', ANONYMOUS)).toThrow('POST on function f requires authentication');
  });
});

describe('secretsFromEnv', () => {
  test('maps SVC_SECRET_<NAME> to <NAME> and nothing else', () => {
    expect(
      secretsFromEnv({ SVC_SECRET_API_KEY: 'k', SVC_SECRET_: 'empty name', SVC_SECRETX: 'no', DATABASE_URL: 'postgres://u:p@h/db', SVC_SECRET_lower: 'l' }),
    ).toEqual({ API_KEY: 'k', lower: 'l' });
  });
});
