/**
 * `svc generate` with nothing to do (generator/fingerprint.ts, issue 21 §3): a second run with the same
 * inputs and untouched outputs answers the first run's result without running a step (the injected
 * schema engine and filter check are never called), and any change to an input or an output makes it
 * run every step again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate, type GenerateOptions } from '../../dist/generator/index.js';
import { diffDatamodels } from '../../dist/runtime/data/schema-engine.js';
import { filterProblems } from '../../dist/runtime/query/check-filters.js';
import { ROOT } from '../support/cli.js';

const work = mkdtempSync(join(tmpdir(), 'svc-fingerprint-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const untouchable: Pick<GenerateOptions, 'diffDatamodels' | 'checkFilters'> = {
  diffDatamodels: () => Promise.reject(new Error('the schema engine was called')),
  checkFilters: () => {
    throw new Error('the filter check was called');
  },
};

describe('generate with nothing to do', () => {
  it('answers the last result without running a step; any change to an input or an output runs them all', async () => {
    const appDir = join(work, 'catalog');
    cpSync(join(ROOT, 'test/fixtures/apps/catalog'), appDir, { recursive: true });
    const env = { DATABASE_URL: `file:${join(appDir, 'data', 'app.db')}` };
    const first = await generate({ appDir, env, diffDatamodels, checkFilters: filterProblems });
    expect(first.unchanged).toBeUndefined();
    expect(first.migration).toMatch(/_init$/);

    const again = await generate({ appDir, env, ...untouchable });
    expect(again).toMatchObject({ unchanged: true, written: [], migration: null, warnings: first.warnings });
    expect(again.manifest).toEqual(first.manifest);

    // Each of these makes the next run do everything (and so call the untouchable engine).
    const changes: [string, () => void, NodeJS.ProcessEnv?][] = [
      ['a definition', () => writeFileSync(join(appDir, 'views', 'Extra.json'), JSON.stringify({ name: 'Extra', collection: 'Book', filter: 'year gt 2000' }))],
      [
        'a trigger',
        () => {
          mkdirSync(join(appDir, 'triggers'), { recursive: true });
          const webhook = { url: '${env.HOOK_URL}', secret: '${secrets.HOOK}' };
          writeFileSync(join(appDir, 'triggers', 'watch.json'), JSON.stringify({ name: 'watch', collection: 'Book', on: ['create'], webhook }));
        },
      ],
      ['a generated file', () => utimesSync(join(appDir, '.svc', 'openapi.json'), new Date(), new Date(Date.now() - 60_000))],
      ['a migration', () => writeFileSync(join(appDir, 'migrations', 'sqlite', 'migration_lock.toml'), 'provider = "sqlite"\n# edited\n')],
      ['the database URL', () => {}, { DATABASE_URL: `file:${join(appDir, 'data', 'other.db')}` }],
    ];
    for (const [what, change, otherEnv] of changes) {
      change();
      await expect(generate({ appDir, env: otherEnv ?? env, ...untouchable }), what).rejects.toThrow(/was called/);
      await generate({ appDir, env: otherEnv ?? env, diffDatamodels, checkFilters: filterProblems });
      expect((await generate({ appDir, env: otherEnv ?? env, ...untouchable })).unchanged, what).toBe(true);
    }
  }, 240_000);
});
