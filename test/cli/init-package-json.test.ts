/**
 * `svc init` gives the app a package.json that lists svc (this package, under its npm name) and the
 * TypeScript svc uses, so `npm install` in a fresh clone of the app is all it needs (issue 32 §3);
 * a package.json already there (from `npm install --save-dev svc-platform`) keeps its entries.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runCli } from '../support/cli.js';

const OWN = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string> };
const work = mkdtempSync(join(tmpdir(), 'svc-init-pkg-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const readPkg = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;

describe('svc init and package.json', () => {
  it('the package is installable: not private, a name of its own (npm "svc" is another project), bin svc', () => {
    expect(OWN.name).toBe('svc-platform');
    expect(OWN).not.toHaveProperty('private');
    expect((OWN as { bin?: Record<string, string> }).bin).toEqual({ svc: 'dist/cli/index.js' });
  });

  it('writes a package.json listing svc at its running version and the TypeScript it uses', async () => {
    const dir = join(work, 'my-app');
    const r = await runCli(['init', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(readPkg(dir)).toEqual({
      name: 'my-app',
      version: '0.1.0',
      private: true,
      devDependencies: { [OWN.name]: `^${OWN.version}`, typescript: OWN.dependencies.typescript },
    });
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toContain('node_modules/');
  });

  it('keeps an existing package.json and the way svc was installed, adding only what is missing', async () => {
    const dir = join(work, 'installed');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ devDependencies: { [OWN.name]: 'file:../svc.tgz' }, scripts: { start: 'svc serve' } }));
    expect((await runCli(['init', dir])).code).toBe(0);
    expect(readPkg(dir)).toEqual({
      devDependencies: { [OWN.name]: 'file:../svc.tgz', typescript: OWN.dependencies.typescript },
      scripts: { start: 'svc serve' },
    });
  });
});
