/**
 * @module Whether `svc generate` has anything to do (issue 21 §3): a fingerprint of what a run reads
 * and of what it left behind, kept in `.svc/.generate-state.json` with the run's warnings.
 *
 * - Inputs (taken before a run): the content of `svc.json` and of every file in `collections/`,
 *   `views/`, `queries/`, `functions/`, `triggers/` and `external/`; the environment's `DATABASE_URL` and
 *   `REDIS_URL`; the `prismaClient` option; and svc itself (size and time of every file of its
 *   generator, runtime, templates and schemas, so a rebuilt svc generates again).
 * - Outputs (taken after it): name, size and time of every file of `.svc/` (but its `node_modules/`,
 *   `backups/` and the state file) and of `migrations/`.
 *
 * When both match the state, the last run's result stands. This module loads nothing but Node's own
 * modules, so that answer takes milliseconds.
 */
import { createHash, type Hash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppManifest } from '../runtime/index.js';
import type { GenerateOptions, GenerateResult } from './generate-types.js';
import type { Diagnostic } from './validate/diagnostics.js';

/** The state file, in `.svc/`. */
export const STATE_FILE = '.generate-state.json';

/** The app folders whose files are definitions or function code. */
const INPUT_FOLDERS = ['collections', 'views', 'queries', 'functions', 'triggers', 'external'];

/** The folder holding this module's `generator/` and `runtime/` (`dist/` when built, the checkout otherwise). */
const CODE_ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
/** The package root (holds package.json, `templates/`, `schemas/`). */
const PACKAGE_ROOT = existsSync(join(CODE_ROOT, 'package.json')) ? CODE_ROOT : dirname(CODE_ROOT);

interface State {
  inputs: string;
  outputs: string;
  warnings: Diagnostic[];
}

/** Every file below `dir` (relative paths, sorted), skipping the folders named in `skip`. */
function filesBelow(dir: string, skip: Set<string> = new Set()): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) {
        if (!skip.has(entry.name)) walk(full);
      } else if (entry.isFile()) out.push(relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

/** Adds name, size and modification time of each file below `dir` to `hash`. */
function addStats(hash: Hash, dir: string, skip?: Set<string>): void {
  for (const file of filesBelow(dir, skip)) {
    if (file === STATE_FILE) continue;
    const s = statSync(join(dir, file));
    hash.update(`${file}\0${s.size}\0${s.mtimeMs}\0`);
  }
}

/** The fingerprint of what a run of `svc generate` reads (see the module notes). */
function inputsOf(appDir: string, env: NodeJS.ProcessEnv, options: Pick<GenerateOptions, 'prismaClient'>): string {
  const hash = createHash('sha256');
  const files = ['svc.json', ...INPUT_FOLDERS.flatMap((f) => filesBelow(join(appDir, f)).map((p) => join(f, p)))];
  for (const file of files) {
    const path = join(appDir, file);
    hash
      .update(`${file}\0`)
      .update(existsSync(path) ? readFileSync(path) : '\0absent')
      .update('\0');
  }
  hash.update(`env\0${env.DATABASE_URL ?? ''}\0${env.REDIS_URL ?? ''}\0prismaClient\0${String(options.prismaClient)}\0`);
  for (const part of ['generator', 'runtime']) addStats(hash, join(CODE_ROOT, part));
  for (const part of ['templates', 'schemas']) addStats(hash, join(PACKAGE_ROOT, part));
  hash.update(readFileSync(join(PACKAGE_ROOT, 'package.json')));
  return hash.digest('hex');
}

/** The fingerprint of what a run left behind: `.svc/` and `migrations/`. */
function outputsOf(appDir: string): string {
  const hash = createHash('sha256');
  addStats(hash, join(appDir, '.svc'), new Set(['node_modules', 'backups']));
  hash.update('migrations\0');
  addStats(hash, join(appDir, 'migrations'));
  return hash.digest('hex');
}

function readState(appDir: string): State | undefined {
  try {
    return JSON.parse(readFileSync(join(appDir, '.svc', STATE_FILE), 'utf8')) as State;
  } catch {
    return undefined;
  }
}

/**
 * Compares the app with the state the last successful run left.
 * @returns `result` (that run's, with `unchanged: true`) when nothing changed; always the `inputs`
 *   fingerprint, for `recordRun` after a full run
 */
export function previousRun(
  appDir: string,
  env: NodeJS.ProcessEnv,
  options: Pick<GenerateOptions, 'prismaClient'>,
): { inputs: string; result?: GenerateResult } {
  const inputs = inputsOf(appDir, env, options);
  const state = readState(appDir);
  if (!state || state.inputs !== inputs || state.outputs !== outputsOf(appDir)) return { inputs };
  let manifest: AppManifest;
  try {
    manifest = JSON.parse(readFileSync(join(appDir, '.svc', 'manifest.json'), 'utf8')) as AppManifest;
  } catch {
    return { inputs };
  }
  return { inputs, result: { manifest, written: [], migration: null, warnings: state.warnings, unchanged: true } };
}

/**
 * Keeps the fingerprints of a successful run (`inputs` taken before it, the outputs now) and its warnings.
 * Never throws: without the state file, the next run simply does everything again.
 */
export function recordRun(appDir: string, inputs: string, result: GenerateResult): void {
  const state: State = { inputs, outputs: outputsOf(appDir), warnings: result.warnings };
  try {
    writeFileSync(join(appDir, '.svc', STATE_FILE), `${JSON.stringify(state)}\n`);
  } catch {
    /* a read-only .svc/: nothing is remembered */
  }
}
