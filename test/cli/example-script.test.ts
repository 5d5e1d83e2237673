/**
 * `npm run example` right after `npm install` (issue 32 §4): install already built svc (`prepare`),
 * so the example's script builds only when a source is newer than `dist/` (scripts/build-if-stale.mjs).
 * `npm test` builds first, so here `dist/` is up to date.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';

describe('npm run example', () => {
  it('starts from the build that install made instead of building again', () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.example).toMatch(/^node scripts\/build-if-stale\.mjs && /);
    expect(scripts.example).not.toContain('npm run build');
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts/build-if-stale.mjs')], { cwd: ROOT, encoding: 'utf8' });
    expect(out).toContain('dist/ is up to date with the sources; not building again');
  });
});
