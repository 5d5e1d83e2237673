/**
 * @module `/api/_admin/identities` (DESIGN §9, docs/console.md "Admin endpoints"): users and service
 * accounts in one list, created, changed and deleted with the same functions as `svc user …` and
 * `svc service-account …` (`auth/identities.ts`), so a change takes effect as the CLI's does: at
 * once on this instance and, over the bus, on the others (`IdentityCache.changed`; without Redis
 * within 5 s), also on open sockets. Refresh-token families are the identity's sessions.
 */
import { Router, type Request, type Response } from 'express';
import type { Database } from '../../data/database.js';
import type { AuthService } from '../../auth/auth-service.js';
import { HttpError } from '../../errors.js';
import { join, raw, sql, type Sql } from '../../query/sql.js';
import { parseRoles, TABLE, toBool, toDate, toDateOrNull, type Raw } from '../../auth/store.js';
import {
  createServiceAccount,
  createUser,
  deleteIdentity,
  disableIdentity,
  enableIdentity,
  setIdentityAdmin,
  setIdentityRoles,
  setPassword,
  type IdentityRef,
} from '../../auth/identities.js';
import { revokeFamily } from '../../auth/refresh-tokens.js';
import type { ProviderLink } from '../../auth/providers/link.js';
import { enumParam, idParam, isKey, isOffset, pageOf, pageParams, requireAdmin, textParam } from './params.js';
import type { AgentUploads } from '../../agent/uploads.js';

/** One identity as the admin endpoints show it. */
export interface AdminIdentity {
  id: string;
  kind: 'user' | 'serviceAccount';
  /** A user's username, a service account's name. */
  name: string;
  roles: string[];
  admin: boolean;
  disabled: boolean;
  createdAt: string;
  lastSignInAt: string | null;
  /** Users: the e-mail address, or null. */
  email?: string | null;
  /** Service accounts: the client id. */
  clientId?: string;
  /** Users: the identity providers linked to the user, oldest first (DESIGN §11). */
  providers?: ProviderLink[];
}

const ALL = sql`SELECT "id", 'user' AS "kind", "username" AS "name", "roles", "admin", "disabledAt", "createdAt", "lastSignInAt", "email", NULL AS "clientId" FROM ${TABLE.users}
  UNION ALL
  SELECT "id", 'serviceAccount' AS "kind", "name", "roles", "admin", "disabledAt", "createdAt", "lastSignInAt", NULL AS "email", "clientId" FROM ${TABLE.serviceAccounts}`;

function decode(r: Raw): AdminIdentity {
  const kind = String(r.kind) === 'user' ? 'user' : 'serviceAccount';
  const lastSignInAt = toDateOrNull(r.lastSignInAt);
  return {
    id: String(r.id),
    kind,
    name: String(r.name),
    roles: parseRoles(r.roles),
    admin: toBool(r.admin),
    disabled: r.disabledAt !== null && r.disabledAt !== undefined,
    createdAt: toDate(r.createdAt).toISOString(),
    lastSignInAt: lastSignInAt?.toISOString() ?? null,
    ...(kind === 'user' ? { email: r.email === null || r.email === undefined ? null : String(r.email) } : { clientId: String(r.clientId) }),
  };
}

/**
 * Adds `providers` (the rows of `_svc_user_providers`, oldest first) to every user of `identities`,
 * in one query. Service accounts get none.
 */
export async function withProviders(db: Database, identities: AdminIdentity[]): Promise<AdminIdentity[]> {
  const users = identities.filter((i) => i.kind === 'user');
  if (users.length === 0) return identities;
  const ids = join(
    users.map((u) => sql`${u.id}`),
    ', ',
  );
  const rows = await db.query<Raw>(
    sql`SELECT "userId", "provider", "subject", "email", "createdAt" FROM ${TABLE.userProviders} WHERE "userId" IN (${ids}) ORDER BY "createdAt", "provider"`,
  );
  const byUser = new Map<string, ProviderLink[]>(users.map((u) => [u.id, []]));
  for (const r of rows)
    byUser.get(String(r.userId))?.push({
      provider: String(r.provider),
      subject: String(r.subject),
      email: r.email === null || r.email === undefined ? null : String(r.email),
      createdAt: toDate(r.createdAt).toISOString(),
    });
  return identities.map((i) => (i.kind === 'user' ? { ...i, providers: byUser.get(i.id) ?? [] } : i));
}

/** `%`, `_` and `\` of a search text, escaped for LIKE … ESCAPE '\'. */
const likeText = (q: string) => `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The identity with this id, or null. */
export async function identityById(db: Database, id: string): Promise<AdminIdentity | null> {
  const rows = await db.query<Raw>(sql`SELECT * FROM (${ALL}) AS "i" WHERE "id" = ${id}`);
  return rows.length > 0 ? decode(rows[0]) : null;
}

async function found(db: Database, given: unknown): Promise<AdminIdentity> {
  const id = String(given);
  const checked = idParam(id);
  const identity = checked === null ? null : await identityById(db, checked);
  if (!identity) throw new HttpError('NOT_FOUND', `no user or service account has the id ${JSON.stringify(id)}`);
  return (await withProviders(db, [identity]))[0];
}

const refOf = (i: AdminIdentity): IdentityRef => ({ kind: i.kind, id: i.id });

type Body = Record<string, unknown>;

function objectBody(req: Request): Body {
  if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))
    throw new HttpError('VALIDATION_FAILED', 'the body must be a JSON object (Content-Type: application/json)');
  return req.body as Body;
}

/** 400 naming the field. */
const badField = (field: string, message: string) => new HttpError('VALIDATION_FAILED', `${field} ${message}`, { details: [{ path: `/${field}`, message }] });

function checkKeys(body: Body, allowed: readonly string[]): void {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length > 0) throw badField(extra[0], `is not a field here (allowed: ${allowed.join(', ')})`);
}

function stringField(body: Body, field: string, required: boolean): string | undefined {
  const v = body[field];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string') throw badField(field, 'must be a string');
  if (v.includes('\u0000')) throw badField(field, 'may not contain NUL characters');
  return v;
}

function boolField(body: Body, field: string): boolean | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw badField(field, 'must be true or false');
  return v;
}

function rolesField(body: Body): string[] | undefined {
  const v = body.roles;
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length > 100 || !v.every((r) => typeof r === 'string' && !r.includes('\u0000')))
    throw badField('roles', 'must be an array of at most 100 role names');
  return v as string[];
}

/**
 * The router; mount it under `/api/_admin` after authentication and a JSON body parser.
 * Source: DESIGN §9 (identities), §3a (the commands whose effect each change has).
 */
export function identitiesRouter(db: Database, auth: AuthService, agentUploads?: AgentUploads): Router {
  const router = Router();
  const forget = (i: AdminIdentity) => auth.identities.changed(i.kind, i.id);

  router.get('/identities', async (req: Request, res: Response) => {
    requireAdmin(res);
    const query = req.query as Record<string, unknown>;
    const page = pageParams(query, isKey);
    const q = textParam(query, 'q', 200);
    const kind = enumParam(query, 'kind', ['user', 'serviceAccount'] as const);
    const where: Sql[] = [];
    if (q) {
      const like = likeText(q);
      where.push(
        sql`(LOWER("name") LIKE ${like} ESCAPE '\\' OR LOWER(COALESCE("email", '')) LIKE ${like} ESCAPE '\\' OR LOWER(COALESCE("clientId", '')) LIKE ${like} ESCAPE '\\' OR "id" = ${q})`,
      );
    }
    if (kind) where.push(sql`"kind" = ${kind}`);
    if (page.after) where.push(sql`"id" > ${page.after}`);
    const filter = where.length > 0 ? sql`WHERE ${join(where, ' AND ')}` : raw('');
    const rows = await db.query<Raw>(sql`SELECT * FROM (${ALL}) AS "i" ${filter} ORDER BY "id" LIMIT ${page.pageSize + 1}`);
    const answer = pageOf(rows.map(decode), page.pageSize, (i) => i.id);
    res.json({ ...answer, data: await withProviders(db, answer.data) });
  });

  router.get('/identities/:id', async (req: Request, res: Response) => {
    requireAdmin(res);
    res.json(await found(db, req.params.id));
  });

  router.post('/identities', async (req: Request, res: Response) => {
    requireAdmin(res);
    const body = objectBody(req);
    const kind = body.kind ?? 'user';
    if (kind === 'serviceAccount') {
      checkKeys(body, ['kind', 'name', 'roles', 'admin']);
      const created = await createServiceAccount(db, { name: stringField(body, 'name', true)!, roles: rolesField(body), admin: boolField(body, 'admin') });
      res.status(201).json({ ...(await found(db, created.id)), clientSecret: created.clientSecret });
      return;
    }
    if (kind !== 'user') throw badField('kind', 'must be "user" or "serviceAccount"');
    checkKeys(body, ['kind', 'username', 'password', 'roles', 'email', 'admin']);
    const id = await createUser(db, {
      username: stringField(body, 'username', true)!,
      password: stringField(body, 'password', true)!,
      roles: rolesField(body),
      email: stringField(body, 'email', false),
      admin: boolField(body, 'admin'),
    });
    res.status(201).json(await found(db, id));
  });

  router.patch('/identities/:id', async (req: Request, res: Response) => {
    requireAdmin(res);
    const body = objectBody(req);
    checkKeys(body, ['disabled', 'roles', 'admin', 'password']);
    const disabled = boolField(body, 'disabled');
    const roles = rolesField(body);
    const admin = boolField(body, 'admin');
    const password = stringField(body, 'password', false);
    const identity = await found(db, req.params.id);
    if (password !== undefined && identity.kind !== 'user') throw badField('password', 'applies to users only (a service account has a client secret)');
    const ref = refOf(identity);
    if (roles !== undefined) await setIdentityRoles(db, ref, roles);
    if (admin !== undefined) await setIdentityAdmin(db, ref, admin);
    if (password !== undefined) await setPassword(db, identity.id, password);
    if (disabled === true) await disableIdentity(db, ref);
    if (disabled === false) await enableIdentity(db, ref);
    forget(identity);
    res.json(await found(db, identity.id));
  });

  router.delete('/identities/:id', async (req: Request, res: Response) => {
    requireAdmin(res);
    const identity = await found(db, req.params.id);
    // The attachments' bytes first: deleteIdentity removes the rows that name them.
    await agentUploads?.deleteIdentity(identity.id);
    await deleteIdentity(db, refOf(identity));
    forget(identity);
    res.status(204).end();
  });

  router.get('/identities/:id/sessions', async (req: Request, res: Response) => {
    requireAdmin(res);
    const query = req.query as Record<string, unknown>;
    const page = pageParams(query, isOffset);
    const identity = await found(db, req.params.id);
    const offset = page.after ?? 0;
    const rows = await db.query<Raw>(
      sql`SELECT "familyId", MIN("clientId") AS "clientId", MIN("createdAt") AS "startedAt", MAX("createdAt") AS "lastUsedAt", MAX("expiresAt") AS "expiresAt",
          SUM(CASE WHEN "revokedAt" IS NULL AND "usedAt" IS NULL THEN 1 ELSE 0 END) AS "live"
        FROM ${TABLE.refreshTokens} WHERE "subjectKind" = ${identity.kind} AND "subjectId" = ${identity.id}
        GROUP BY "familyId" ORDER BY MAX("createdAt") DESC, "familyId" LIMIT ${page.pageSize + 1} OFFSET ${offset}`,
    );
    const now = Date.now();
    const sessions = rows.map((r) => {
      const expiresAt = toDate(r.expiresAt);
      return {
        familyId: String(r.familyId),
        clientId: String(r.clientId),
        startedAt: toDate(r.startedAt).toISOString(),
        lastUsedAt: toDate(r.lastUsedAt).toISOString(),
        expiresAt: expiresAt.toISOString(),
        active: Number(r.live) > 0 && expiresAt.getTime() > now,
      };
    });
    const answer = pageOf(sessions, page.pageSize, () => offset + page.pageSize);
    res.json(answer);
  });

  router.delete('/identities/:id/sessions/:familyId', async (req: Request, res: Response) => {
    requireAdmin(res);
    const identity = await found(db, req.params.id);
    const familyId = idParam(req.params.familyId) ?? '';
    const rows = await db.query<Raw>(
      sql`SELECT "id" FROM ${TABLE.refreshTokens} WHERE "familyId" = ${familyId} AND "subjectKind" = ${identity.kind} AND "subjectId" = ${identity.id} LIMIT 1`,
    );
    if (rows.length === 0) throw new HttpError('NOT_FOUND', `${identity.name} has no session ${JSON.stringify(familyId)}`);
    await revokeFamily(db, familyId);
    res.status(204).end();
  });

  return router;
}
