/**
 * @module `svc init`: writes a small working example app (Project with child Task rows) from
 * `templates/init/`.
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderTemplate } from './render/render-template.js';

const INIT_DIR = fileURLToPath(new URL('../../templates/init/', import.meta.url));

function templates(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? templates(join(dir, f)) : [join(dir, f)]));
}

/**
 * Writes the example app into `dir` (created if missing). The api-name is the folder's name,
 * reduced to `[A-Za-z0-9_]`.
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
  return written;
}
