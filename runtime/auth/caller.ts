/**
 * @module Who is calling: the identity every authorization decision reads (SPEC §5, DESIGN §3).
 * `authenticateCredentials` (authenticate.ts) finds it; the Express middleware stores it in
 * `res.locals.caller`, where route handlers read it through `callerOf`. Until a request is
 * authenticated it is `ANONYMOUS`.
 */
import { HttpError } from '../errors.js';

/** The built-in role names of access rules (DESIGN §3). */
export const ANONYMOUS_ROLE = '_ANONYMOUS_USER';
export const AUTHENTICATED_ROLE = '_AUTHENTICATED_USER';
export const CREATOR_ROLE = '_CREATOR';

/** The identity behind a request. */
export interface Caller {
  kind: 'anonymous' | 'user' | 'serviceAccount';
  /** User id or service-account id (the value of `createdBy` and `me()`); null when anonymous. */
  id: string | null;
  /** Username of a user, name of a service account; null when anonymous. */
  username: string | null;
  /** Custom roles held (never the built-in `_…` names). */
  roles: string[];
  /** Admin service accounts bypass access rules and policies. */
  admin: boolean;
  /**
   * Set only for a function run by a trigger (or a job such a function enqueued): the depth of that
   * event (DESIGN §12 loops); writes made as this caller are captured one deeper.
   */
  triggerDepth?: number;
}

export const ANONYMOUS: Caller = Object.freeze({ kind: 'anonymous', id: null, username: null, roles: [], admin: false }) as Caller;

/**
 * The caller of the request that `res` answers (an Express response, typed structurally so this
 * module stays framework-free); `ANONYMOUS` when none was authenticated.
 */
export function callerOf(res: { locals: Record<string, unknown> }): Caller {
  return (res.locals.caller as Caller | undefined) ?? ANONYMOUS;
}

/** Every role name an access rule may match for this caller, built-in ones included (not `_CREATOR`). */
export function rolesOf(caller: Caller): string[] {
  return caller.kind === 'anonymous' ? [ANONYMOUS_ROLE] : [AUTHENTICATED_ROLE, ...caller.roles];
}

/**
 * Refuses a caller none of whose roles is in `allowed` (the role names of one access rule):
 * anonymous → 401 `UNAUTHORIZED`, authenticated → 403 `FORBIDDEN` (DESIGN §4 "Auth details").
 * `_ANONYMOUS_USER` in `allowed` admits everyone; admin callers always pass.
 * `what` names the thing refused in the message, e.g. `GET on Order`.
 */
export function requireRole(caller: Caller, allowed: readonly string[] | undefined, what: string): void {
  if (caller.admin) return;
  const rules = allowed ?? [];
  if (rules.includes(ANONYMOUS_ROLE)) return;
  if (caller.kind !== 'anonymous' && rolesOf(caller).some((r) => rules.includes(r))) return;
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', `${what} requires authentication`);
  throw new HttpError('FORBIDDEN', `${what} is not allowed for this caller`);
}
