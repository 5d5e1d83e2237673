/**
 * @module `svc init`: writes a small working example app (Project with child Task rows) from
 * `templates/init/`, and a `package.json` that lists this package and TypeScript as devDependencies
 * (so `npx svc` and `npx tsc -p .` in the app folder run the local copies).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderTemplate } from './render/render-template.js';

/** `templates/init/` beside this file's folder: `dist/templates/init/` from `dist/generator/`. */
const INIT_DIR = fileURLToPath(new URL('../templates/init/', import.meta.url));
/** This package's package.json: two levels up from `dist/generator/`, one from `generator/`. */
const OWN_PACKAGE_JSON = [new URL('../../package.json', import.meta.url), new URL('../package.json', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((p) => existsSync(p) && (JSON.parse(readFileSync(p, 'utf8')) as { bin?: { svc?: string } }).bin?.svc)!;

interface PackageJson {
  name?: string;
  version?: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [key: string]: unknown;
}

function templates(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? templates(join(dir, f)) : [join(dir, f)]));
}

/**
 * The app's package.json: the one already there (e.g. written by `npm install --save-dev <svc>`) with
 * what is missing added, or a new one. svc's own entry is `^<running version>` unless the app already
 * lists svc (a tarball or folder it was installed from stays); `typescript` is the version svc uses.
 */
function appPackageJson(existing: PackageJson | null, name: string): PackageJson {
  const own = JSON.parse(readFileSync(OWN_PACKAGE_JSON, 'utf8')) as PackageJson;
  const pkg: PackageJson = existing ?? { name: name.toLowerCase().replace(/_/g, '-'), version: '0.1.0', private: true };
  const listed = (dep: string) => pkg.dependencies?.[dep] ?? pkg.devDependencies?.[dep];
  const add: Record<string, string> = {};
  if (!listed(own.name!)) add[own.name!] = `^${own.version}`;
  if (!listed('typescript')) add.typescript = own.dependencies!.typescript!;
  pkg.devDependencies = Object.fromEntries(Object.entries({ ...pkg.devDependencies, ...add }).sort(([a], [b]) => a.localeCompare(b)));
  return pkg;
}

/**
 * Writes the example app into `dir` (created if missing). The api-name is the folder's name,
 * reduced to `[A-Za-z0-9_]`. An existing `package.json` is kept, with svc and TypeScript added to its
 * devDependencies when it lists neither.
 * @returns the relative paths written
 * @throws Error when `dir` already holds a `svc.json` (nothing is overwritten)
 */
export function initApp(dir: string): string[] {
  const appDir = resolve(dir);
  if (existsSync(join(appDir, 'svc.json'))) throw new Error(`${join(dir, 'svc.json')} already exists; nothing was written`);
  const name =
    basename(appDir)
      .replace(/[^A-Za-z0-9_]/g, '_')
      .replace(/^[^A-Za-z]+/, '') || 'app';
  const pkgPath = join(appDir, 'package.json');
  const existing = existsSync(pkgPath) ? (JSON.parse(readFileSync(pkgPath, 'utf8')) as PackageJson) : null;
  const written: string[] = [];
  for (const file of templates(INIT_DIR).sort()) {
    const rel = relative(INIT_DIR, file)
      .replace(/\.hbs$/, '')
      .replace(/^gitignore$/, '.gitignore');
    const out = join(appDir, rel);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, renderTemplate(`init/${relative(INIT_DIR, file).split('\\').join('/')}`, { name }));
    written.push(rel);
  }
  writeFileSync(pkgPath, `${JSON.stringify(appPackageJson(existing, name), null, 2)}\n`);
  written.push('package.json');
  return written;
}
