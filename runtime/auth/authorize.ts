/**
 * @module The one authorization point of every data route (DESIGN §3 `access` and `policies`, §4
 * "Auth details"): given a caller, a collection, the access rules in force (the collection's, or a
 * view's or query's own) and a method, it either refuses (401 anonymous, 403 authenticated) or
 * answers the SQL conditions on alias `t0` that narrow the rows the caller may touch.
 *
 * - Access rules: a method with no rule is refused. `_ANONYMOUS_USER` admits everyone,
 *   `_AUTHENTICATED_USER` every authenticated caller, a custom role its holders. `_CREATOR` admits any
 *   authenticated caller, narrowed to rows whose `createdBy` is the caller (on POST: no narrowing).
 *   Admin service accounts bypass rules and policies.
 * - Policies: when a collection has policies, a row is visible only when one of the policies whose
 *   `roleNames` meet the caller's roles (`_ANONYMOUS_USER` in a policy applies to every caller)
 *   matches; with no applicable policy nothing is visible. Policies never restrict POST (SPEC §4.4.4).
 */
import type { AccessMethod, AccessRule, AppManifest, Collection, Policy } from '../manifest.js';
import { HttpError } from '../errors.js';
import { compileFilter } from '../query/filter-compile.js';
import type { FilterNode } from '../query/filter-ast.js';
import { parseFilter } from '../query/filter-parser.js';
import { ident, join, raw, sql, type Sql } from '../query/sql.js';
import { ANONYMOUS_ROLE, CREATOR_ROLE, requireRole, rolesOf, type Caller } from './caller.js';
import type { WriteAccess } from '../data/children.js';

/** What an admitted caller may touch. Conditions are on the row alias given to `authorize` (default `t0`). */
export interface Grant {
  /** Policy conditions: a row failing them is invisible (never listed or counted, 404 when named). */
  visibility: Sql[];
  /** Set when the caller is admitted only through `_CREATOR`: `createdBy` = caller (lists narrow, a named row is 403). */
  owner: Sql | null;
}

const parsed = new WeakMap<Policy, FilterNode>();

function policyFilter(policy: Policy): FilterNode {
  let node = parsed.get(policy);
  if (!node) {
    node = parseFilter(policy.filter);
    parsed.set(policy, node);
  }
  return node;
}

function collectionNamed(manifest: AppManifest, name: string): Collection {
  const c = manifest.collections.find((x) => x.name === name);
  if (!c) throw new HttpError('NOT_FOUND', `no collection is named ${JSON.stringify(name)}`);
  return c;
}

/**
 * The policy conditions of `collection` for `caller` (method-independent), on `alias`.
 * @returns `[]` for admins and collections without policies; `[1=0]` when no policy applies to the caller
 * @throws HttpError INVALID_FILTER (400) only for a policy that no longer compiles (checked at start by `checkPolicies`)
 * Source: DESIGN §3 `policies` (`me()` is the caller's id).
 */
export function policyConditions(caller: Caller, manifest: AppManifest, collection: Collection, alias = 't0'): Sql[] {
  if (caller.admin || collection.policies.length === 0) return [];
  const roles = new Set(rolesOf(caller));
  const applicable = collection.policies.filter((p) => p.roleNames.some((r) => r === ANONYMOUS_ROLE || roles.has(r)));
  if (applicable.length === 0) return [raw('1=0')];
  const now = new Date();
  const parts = applicable.map(
    (p) => sql`(${compileFilter(policyFilter(p), { manifest, collection, provider: manifest.provider, alias, now, callerId: caller.id })})`,
  );
  return [sql`(${join(parts, ' OR ')})`];
}

/**
 * Decides whether `caller` may use `method` on `collection` under `rules`.
 * @param rules - the access rules in force: the collection's, or a view's or query's own
 * @param what - names the target in refusals, e.g. `GET on Order` (default `<method> on <collection>`)
 * @throws HttpError UNAUTHORIZED (401) for an anonymous caller, FORBIDDEN (403) for an authenticated one
 * Source: DESIGN §3 (access, `_CREATOR`, admins), §4 "Auth details".
 */
export function authorize(
  caller: Caller,
  manifest: AppManifest,
  collection: Collection,
  method: AccessMethod,
  rules: readonly AccessRule[],
  options: { alias?: string; what?: string } = {},
): Grant {
  const alias = options.alias ?? 't0';
  if (caller.admin) return { visibility: [], owner: null };
  const allowed = rules.filter((r) => r.method === method).flatMap((r) => r.roleNames);
  let owner: Sql | null = null;
  const admitted = admission(caller, allowed);
  if (admitted === 'refused') requireRole(caller, allowed, options.what ?? `${method} on ${collection.name}`);
  if (admitted === 'creator' && method !== 'POST') owner = ownerCondition(caller, alias);
  return { visibility: method === 'POST' ? [] : policyConditions(caller, manifest, collection, alias), owner };
}

/**
 * How the role names of one method's rules admit `caller`: `full` (a role it holds, or
 * `_ANONYMOUS_USER`), `creator` (an authenticated caller admitted only through `_CREATOR`: its own
 * rows), or `refused`. Admins are `full`. The one place `_CREATOR` admission is decided: `authorize`
 * and `fromRowConditions` both ask it, so a collection's list and a query over it cannot drift.
 */
function admission(caller: Caller, allowed: readonly string[]): 'full' | 'creator' | 'refused' {
  if (caller.admin || allowed.includes(ANONYMOUS_ROLE)) return 'full';
  if (caller.kind === 'anonymous') return 'refused';
  if (rolesOf(caller).some((r) => allowed.includes(r))) return 'full';
  return allowed.includes(CREATOR_ROLE) ? 'creator' : 'refused';
}

/** `createdBy` = the caller, on `alias`. */
function ownerCondition(caller: Caller, alias: string): Sql {
  return sql`${ident(alias, 'createdBy')} = ${caller.id}`;
}

/**
 * The row-level restrictions of `collection` for `caller` as a query's `from` rows (DESIGN §4
 * "Queries gate access…"), on `alias`: its policies, and `_CREATOR` in its own GET rule exactly as
 * its list endpoint applies it — a caller holding one of the rule's other roles (or an admin, or a
 * rule with `_ANONYMOUS_USER`) sees every row; an authenticated caller admitted only through
 * `_CREATOR` sees the rows it created; an anonymous caller sees none (`1=0`, where the list endpoint
 * answers 401). A GET rule without `_CREATOR` restricts no row here: who may call the query is the
 * query's own `access`, already decided by the caller of this function (its refusal is not repeated).
 * @returns conditions to AND (empty: every row)
 * @throws HttpError INVALID_FILTER (400) only for a policy that no longer compiles
 */
export function fromRowConditions(caller: Caller, manifest: AppManifest, collection: Collection, alias = 't0'): Sql[] {
  if (caller.admin) return [];
  const allowed = collection.access.filter((r) => r.method === 'GET').flatMap((r) => r.roleNames);
  const policies = policyConditions(caller, manifest, collection, alias);
  if (!allowed.includes(CREATOR_ROLE)) return policies;
  const admitted = admission(caller, allowed);
  if (admitted === 'full') return policies;
  return [...policies, admitted === 'creator' ? ownerCondition(caller, alias) : raw('1=0')];
}

/**
 * The conditions a list read of `collectionName` needs for `caller`: policies and, for `_CREATOR`
 * admission, own rows only. What query and collection list routes pass as `ReadScope.conditions`.
 * @param accessRules - the rules in force (a query's own rules; a view's, or its collection's when null)
 * @throws HttpError UNAUTHORIZED (401) / FORBIDDEN (403) when GET is refused; NOT_FOUND for an unknown collection
 */
export function authorizeRead(caller: Caller, manifest: AppManifest, collectionName: string, accessRules: readonly AccessRule[], alias = 't0'): Sql[] {
  const grant = authorize(caller, manifest, collectionNamed(manifest, collectionName), 'GET', accessRules, { alias });
  return grant.owner ? [...grant.visibility, grant.owner] : grant.visibility;
}

/**
 * Like `authorizeRead` with the collection's own rules, but a refusal is null instead of an error:
 * for rows reached indirectly (expanded lookups, which are then not expanded; dot paths in request
 * filters, which then match no row), on `alias`.
 */
export function readableConditions(caller: Caller, manifest: AppManifest, collectionName: string, alias = 't0'): Sql[] | null {
  try {
    return authorizeRead(caller, manifest, collectionName, collectionNamed(manifest, collectionName).access, alias);
  } catch (err) {
    if (err instanceof HttpError && (err.status === 401 || err.status === 403)) return null;
    throw err;
  }
}

/**
 * Parses and compiles every policy once with a stand-in caller, so a broken policy stops the server at
 * start with a reason naming the collection instead of failing requests.
 * @returns one message per broken policy (empty when all compile)
 */
export function checkPolicies(manifest: AppManifest): string[] {
  const problems: string[] = [];
  const probe: Caller = { kind: 'user', id: '00000000-0000-4000-8000-000000000000', username: 'probe', roles: [], admin: false };
  for (const collection of manifest.collections) {
    collection.policies.forEach((p, i) => {
      try {
        compileFilter(policyFilter(p), { manifest, collection, provider: manifest.provider, alias: 't0', callerId: probe.id });
      } catch (err) {
        problems.push(`${collection.name} policy ${i}: ${(err as Error).message}`);
      }
    });
  }
  return problems;
}

/**
 * The `WriteAccess` of a caller: nested children and lookup targets of a write are reached under their
 * own collection's rules and policies (DESIGN §3; SPEC §4.4 nested children). A lookup may name only a
 * row the caller could GET, whatever hides the others (no GET rule, `_CREATOR`, policies).
 */
export function writeAccessFor(caller: Caller, manifest: AppManifest): WriteAccess {
  return {
    visibility: (name) => policyConditions(caller, manifest, collectionNamed(manifest, name)),
    readable: (name) => readableConditions(caller, manifest, name) ?? [raw('1=0')],
    grant: (collection, method) =>
      authorize(caller, manifest, collection, method, collection.access, { what: `${method} on ${collection.name} (nested children)` }).owner,
  };
}
