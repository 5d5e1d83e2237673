/**
 * @module The database backends every data suite runs against (STYLE §7): SQLite always, PostgreSQL
 * at `SVC_TEST_PG_URL` (default the local server). `SVC_TEST_BACKENDS=sqlite` opts out of
 * PostgreSQL explicitly; it is never skipped silently.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type Backend = 'sqlite' | 'postgresql';

export const PG_ADMIN_URL = process.env.SVC_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';

export function backends(): Backend[] {
  const list = (process.env.SVC_TEST_BACKENDS ?? 'sqlite,postgresql').split(',').map((s) => s.trim());
  return list.filter((b): b is Backend => b === 'sqlite' || b === 'postgresql');
}

/** Creates a fresh PostgreSQL database; returns its URL and a function that drops it. */
export async function createPgDatabase(prefix = 'svc_test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}
