/**
 * @module Database errors a request can cause, recognised on both drivers and mapped to the error
 * codes of DESIGN §4: a missing row, a row still referenced, a unique clash, an unreachable database
 * (503) and a statement that ran too long (504).
 */
import { HttpError, mapInfrastructureError } from '../errors.js';

interface DriverError {
  code?: string;
  message?: string;
  unavailable?: boolean;
  /** PostgreSQL: `Key (sku)=(A-1) already exists.` */
  detail?: string;
  /** PostgreSQL: the index, `Product_sku_key` for Prisma's unique index of `sku`. */
  constraint?: string;
}

/**
 * The column a unique clash is about: from PostgreSQL's detail or constraint name, or SQLite's message
 * (`UNIQUE constraint failed: Product.sku`); undefined when neither names one column.
 */
export function uniqueColumnOf(err: unknown, collection: string): string | undefined {
  const { message, detail, constraint } = (err ?? {}) as DriverError;
  const fromDetail = /^Key \("?([A-Za-z][A-Za-z0-9_]*)"?\)=/.exec(detail ?? '')?.[1];
  if (fromDetail) return fromDetail;
  const prefix = `${collection}_`;
  if (constraint?.startsWith(prefix) && constraint.endsWith('_key')) return constraint.slice(prefix.length, -'_key'.length);
  return /UNIQUE constraint failed: [^.\s]+\.([A-Za-z][A-Za-z0-9_]*)$/.exec(message ?? '')?.[1];
}

/**
 * PostgreSQL 23503; SQLite SQLITE_CONSTRAINT_FOREIGNKEY (or, for a statement with RETURNING,
 * SQLITE_CONSTRAINT_TRIGGER with the foreign-key message).
 */
export function isForeignKeyViolation(err: unknown): boolean {
  const { code, message } = (err ?? {}) as DriverError;
  return (
    code === '23503' ||
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    (!!code?.startsWith('SQLITE_CONSTRAINT') && /FOREIGN KEY constraint failed/.test(message ?? ''))
  );
}

/** PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE / PRIMARYKEY. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as DriverError)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * Maps errors that requests can cause; anything else is returned unchanged (a 500).
 * Source: SPEC §7; DESIGN §4 (409 for a referenced row or a unique clash).
 */
export function mapDatabaseError(err: unknown, collection: string, id?: string): unknown {
  if (err instanceof HttpError) return err;
  if (isForeignKeyViolation(err)) {
    return new HttpError(
      'CONFLICT',
      `${collection}${id ? ` ${JSON.stringify(id)}` : ''} is still referenced by a required lookup of another row; delete or change those rows first`,
    );
  }
  if (isUniqueViolation(err)) {
    const column = uniqueColumnOf(err, collection);
    if (column && column !== 'id') {
      return new HttpError('UNIQUE_VIOLATION', `another ${collection} row already has this ${column}; ${column} is unique`, {
        details: [{ path: `/${column}`, message: `must be unique: another ${collection} row holds this value` }],
      });
    }
    return new HttpError('CONFLICT', `a ${collection} row with the same unique value exists`);
  }
  return mapInfrastructureError(err);
}
