/**
 * @module The one disk writer of the generator: replaces the contents of `.svc/` with a file map,
 * writing only files whose bytes changed and removing files no longer generated.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { FileMap } from './build-files.js';

/** Folders under `.svc/` that other steps own (the Prisma client, module links, `svc dev`'s database backups). */
const KEEP = new Set(['client', 'node_modules', 'backups']);

function listFiles(dir: string, root = dir): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return dir === root && KEEP.has(e.name) ? [] : listFiles(full, root);
    return [relative(root, full).split('\\').join('/')];
  });
}

/**
 * Writes `files` under `outDir`; removes stale generated files (not `client/`, `node_modules/` or `backups/`).
 * @returns paths written (changed or new) and removed, relative to `outDir`
 */
export function writeFiles(outDir: string, files: FileMap): { written: string[]; removed: string[] } {
  const written: string[] = [];
  const removed: string[] = [];
  for (const stale of listFiles(outDir)) {
    if (!(stale in files)) {
      rmSync(join(outDir, stale));
      removed.push(stale);
    }
  }
  for (const [path, content] of Object.entries(files)) {
    const full = join(outDir, path);
    if (existsSync(full) && readFileSync(full, 'utf8') === content) continue;
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    written.push(path);
  }
  return { written, removed };
}
