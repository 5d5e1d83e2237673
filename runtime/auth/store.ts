/**
 * @module Typed access to the system tables through the app's generated Prisma client. The delegate
 * names follow the system models the generator emits (`generator/emit/system-models.ts`:
 * `SvcUser` → `svcUser`, …); `manifest.json` does not carry them, so both sides name them here and there.
 */
import type { PrismaLike } from '../data/database.js';
import { StartupError } from '../load-manifest.js';

export interface UserRow { id: string; username: string; passwordHash: string; roles: string; createdAt: Date }
export interface ServiceAccountRow { id: string; name: string; clientId: string; secretHash: string; roles: string; admin: boolean }
export interface RefreshTokenRow {
  id: string; tokenHash: string; familyId: string; subjectKind: string; subjectId: string; clientId: string;
  expiresAt: Date; usedAt: Date | null; revokedAt: Date | null;
}
export interface SigningKeyRow { id: string; algorithm: string; privateJwk: string; publicJwk: string }
export interface LogRow { id: string; message: string; severity: number; username: string | null; reqId: string | null; createdBy: string | null }

/** The Prisma delegate methods the runtime uses, typed for one row shape. */
export interface Delegate<Row> {
  create(args: { data: Partial<Row> }): Promise<Row>;
  createMany(args: { data: Partial<Row>[] }): Promise<{ count: number }>;
  findUnique(args: { where: Partial<Row> }): Promise<Row | null>;
  updateMany(args: { where: Record<string, unknown>; data: Partial<Row> }): Promise<{ count: number }>;
}

/** The system delegates of a Prisma client (or transaction). */
export interface SystemTables {
  users: Delegate<UserRow>;
  serviceAccounts: Delegate<ServiceAccountRow>;
  refreshTokens: Delegate<RefreshTokenRow>;
  signingKeys: Delegate<SigningKeyRow>;
  log: Delegate<LogRow>;
}

/** @throws StartupError when the generated client predates the system tables (`.svc/` is stale) */
export function systemTables(client: PrismaLike): SystemTables {
  if (!client.svcUser || !client.svcSigningKey) throw new StartupError('.svc/ was generated before users and tokens existed: run `svc generate` again');
  return {
    users: client.svcUser as Delegate<UserRow>,
    serviceAccounts: client.svcServiceAccount as Delegate<ServiceAccountRow>,
    refreshTokens: client.svcRefreshToken as Delegate<RefreshTokenRow>,
    signingKeys: client.svcSigningKey as Delegate<SigningKeyRow>,
    log: client.svcLog as Delegate<LogRow>,
  };
}

/** Roles are stored as a JSON array of names. */
export function parseRoles(text: string): string[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v.filter((r): r is string => typeof r === 'string') : [];
  } catch {
    return [];
  }
}

/** True for Prisma's unique-constraint violation (P2002), however the driver adapter reports it. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { kind?: string }; meta?: { driverAdapterError?: { cause?: { kind?: string } } } };
  return e?.code === 'P2002' || (e?.meta?.driverAdapterError?.cause?.kind ?? e?.cause?.kind) === 'UniqueConstraintViolation';
}
