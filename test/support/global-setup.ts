/** Prints the backends of this run once, and fails fast when PostgreSQL is asked for but unreachable. */
import pg from 'pg';
import { backends, PG_ADMIN_URL } from './backends.js';

export default async function setup(): Promise<void> {
  const list = backends();
  if (list.includes('postgresql')) {
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    try {
      await c.connect();
      await c.end();
    } catch (err) {
      throw new Error(`PostgreSQL at ${PG_ADMIN_URL} is unreachable (${(err as Error).message}); start it or set SVC_TEST_BACKENDS=sqlite`);
    }
  }
  process.stdout.write(`svc tests: data suites run on ${list.join(' and ')}\n`);
}
