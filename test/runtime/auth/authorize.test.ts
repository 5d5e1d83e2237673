/**
 * The authorization point on its own (DESIGN §3 access and policies): which callers each rule admits,
 * what `_CREATOR` narrows, which policies apply, and the 401/403 split.
 */
import { describe, expect, test } from 'vitest';
import type { AccessRule, AppManifest, Collection } from '../../../dist/runtime/manifest.js';
import { authorize, authorizeRead, checkPolicies, policyConditions } from '../../../dist/runtime/auth/authorize.js';
import { ANONYMOUS, type Caller } from '../../../dist/runtime/auth/caller.js';
import { HttpError } from '../../../dist/runtime/errors.js';
import { renderSql } from '../../../dist/runtime/query/sql.js';

const note: Collection = {
  name: 'Note',
  search: false,
  children: [],
  properties: [
    { name: 'title', type: 'string', required: true },
    { name: 'shared', type: 'boolean', required: false },
  ],
  access: [
    { method: 'GET', roleNames: ['_AUTHENTICATED_USER'] },
    { method: 'POST', roleNames: ['_CREATOR'] },
    { method: 'PATCH', roleNames: ['_CREATOR', 'editor'] },
    { method: 'DELETE', roleNames: ['_ANONYMOUS_USER'] },
  ],
  policies: [
    { roleNames: ['_AUTHENTICATED_USER'], filter: "createdBy eq exp('me()') or shared eq true" },
    { roleNames: ['auditor'], filter: 'id ne null' },
  ],
};
const manifest = { provider: 'sqlite', collections: [note] } as unknown as AppManifest;
const user = (roles: string[] = [], id = 'u1'): Caller => ({ kind: 'user', id, username: id, roles, admin: false });
const admin: Caller = { kind: 'serviceAccount', id: 'a1', username: 'admin', roles: [], admin: true };

function outcome(caller: Caller, method: AccessRule['method']): string {
  try {
    const g = authorize(caller, manifest, note, method, note.access);
    return g.owner ? `owner:${renderSql(g.owner, 'sqlite').values.join()}` : 'full';
  } catch (err) {
    return String((err as HttpError).status);
  }
}

describe('authorize', () => {
  test.each([
    ['anonymous GET', { caller: ANONYMOUS, method: 'GET', want: '401' }],
    ['user GET', { caller: user(), method: 'GET', want: 'full' }],
    ['anonymous POST with _CREATOR', { caller: ANONYMOUS, method: 'POST', want: '401' }],
    ['user POST with _CREATOR: not narrowed', { caller: user(), method: 'POST', want: 'full' }],
    ['user PATCH with _CREATOR: own rows', { caller: user([], 'u7'), method: 'PATCH', want: 'owner:u7' }],
    ['editor PATCH', { caller: user(['editor']), method: 'PATCH', want: 'full' }],
    ['anonymous DELETE with _ANONYMOUS_USER', { caller: ANONYMOUS, method: 'DELETE', want: 'full' }],
    ['user PUT without a rule', { caller: user(['editor']), method: 'PUT', want: '403' }],
    ['anonymous PUT without a rule', { caller: ANONYMOUS, method: 'PUT', want: '401' }],
    ['admin PUT without a rule', { caller: admin, method: 'PUT', want: 'full' }],
  ] as const)('%s', (_title, { caller, method, want }) => {
    expect(outcome(caller, method)).toBe(want);
  });

  test("applies only the policies of the caller's roles, with me() bound to the caller", () => {
    const [own] = policyConditions(user([], 'u9'), manifest, note);
    expect(renderSql(own, 'sqlite').values).toContain('u9');
    expect(renderSql(own, 'sqlite').text).not.toContain('IS NOT NULL'); // the auditor policy is not the user's
    const [auditor] = policyConditions(user(['auditor'], 'u9'), manifest, note);
    expect(renderSql(auditor, 'sqlite').text).toMatch(/ OR /);
    expect(renderSql(policyConditions(ANONYMOUS, manifest, note)[0], 'sqlite').text).toBe('1=0'); // no policy for anonymous: nothing
    expect(policyConditions(admin, manifest, note)).toEqual([]);
    expect(policyConditions(user(), manifest, { ...note, policies: [] })).toEqual([]);
    expect(authorize(user(), manifest, note, 'POST', note.access).visibility).toEqual([]); // policies never restrict POST
  });

  test('authorizeRead returns policies and the _CREATOR condition together, and refuses like authorize', () => {
    const rules: AccessRule[] = [{ method: 'GET', roleNames: ['_CREATOR'] }];
    expect(
      authorizeRead(user([], 'u3'), manifest, 'Note', rules)
        .map((c) => renderSql(c, 'sqlite').values)
        .flat(),
    ).toEqual(expect.arrayContaining(['u3']));
    expect(authorizeRead(user(), manifest, 'Note', rules)).toHaveLength(2);
    expect(() => authorizeRead(ANONYMOUS, manifest, 'Note', rules)).toThrow(/requires authentication/);
  });

  test('checkPolicies names every policy that does not compile', () => {
    const broken = {
      ...manifest,
      collections: [
        {
          ...note,
          policies: [
            { roleNames: ['x'], filter: 'colour eq "red"' },
            { roleNames: ['x'], filter: 'title eq' },
          ],
        },
      ],
    } as AppManifest;
    expect(checkPolicies(broken)).toEqual([expect.stringMatching(/^Note policy 0: .*colour/), expect.stringMatching(/^Note policy 1: /)]);
    expect(checkPolicies(manifest)).toEqual([]);
  });
});
