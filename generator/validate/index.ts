/**
 * @module The first half of `svc generate` (DESIGN §3a): load an app folder, validate every definition
 * (JSON syntax, JSON Schema, cross-file model checks), and normalise it to the app model. All problems are
 * collected and thrown once as a `DefinitionError`.
 */
import { createHash } from 'node:crypto';
import type { AppManifest, FilterProblem, FunctionCodeTypes } from '../../runtime/index.js';
import { readCodeTypes } from '../code-types/read-code-types.js';
import { compileFunctions } from '../compile/compile-functions.js';
import { loadApp, type RawApp, type RawFile } from '../load/load-app.js';
import { normaliseModel } from '../model/normalise.js';
import { crossCheck } from './cross-check.js';
import { DefinitionError, sortDiagnostics, type Diagnostic } from './diagnostics.js';
import { validateFiles } from './validate-files.js';

export { loadApp, type RawApp, type RawCodeFile, type RawFile, type RawFunctionFile } from '../load/load-app.js';
export { normaliseModel } from '../model/normalise.js';
export { DefinitionError, formatDiagnostic, type Diagnostic } from './diagnostics.js';

/**
 * Every problem of a loaded app: load errors (missing svc.json, invalid JSON), schema errors,
 * cross-file errors and function code errors (syntax, unresolved imports, code without definition), sorted by file (code-unit order; within a file, in the order found).
 * @param env - `DATABASE_URL` is checked for a supported provider; defaults to `process.env`
 * @returns an empty list when the app is valid
 * Source: DESIGN §3 (definitions), STYLE §4 (diagnostics).
 */
export function validateApp(raw: RawApp, env: NodeJS.ProcessEnv = process.env): Diagnostic[] {
  const { diagnostics, invalidFiles } = validateFiles(raw);
  if (!raw.svc) invalidFiles.add('svc.json');
  return sortDiagnostics([...raw.loadDiagnostics, ...diagnostics, ...crossCheck(raw, env, invalidFiles), ...compileFunctions(raw).diagnostics]);
}

/**
 * Loads, validates and normalises an app folder, then reads the advisory types of default-export
 * function code into each function's `codeTypes` (SPEC §4.8 rule 7).
 * @param appDir - the app folder (DESIGN §3)
 * @param env - `DATABASE_URL`, `REDIS_URL` overrides (DESIGN §3)
 * @returns the app model, the raw files (the emitters need `RawFunctionFile.codeFile`), the compiled
 *   function code (`functions/…` paths relative to `.svc/` → JavaScript) and warnings that do not stop
 *   generation (`DEF_GLOBAL_RES_IGNORED`)
 * @throws DefinitionError with every diagnostic when anything is wrong
 * Source: DESIGN §3, §3a (`svc generate`); SPEC §4.8 (compiled function code).
 */
export async function loadAndValidate(appDir: string, env: NodeJS.ProcessEnv, checkFilters?: FilterCheck): Promise<LoadedApp> {
  const raw = await loadApp(appDir);
  const diagnostics = validateApp(raw, env);
  if (diagnostics.length) {
    // The definitions that are valid on their own still get their filters checked: one run, every problem.
    const part = checkFilters ? validPart(raw, diagnostics, env) : undefined;
    const more = part ? filterDiagnostics(await checkFilters!(part)) : [];
    throw new DefinitionError(sortDiagnostics([...diagnostics, ...more]));
  }
  const manifest = normaliseModel(raw, env);
  const problems = checkFilters ? filterDiagnostics(await checkFilters(manifest)) : [];
  if (problems.length) throw new DefinitionError(problems);
  const { files, warnings } = compileFunctions(raw);
  const codeTypes = codeTypesOf(raw);
  for (const fn of manifest.functions) {
    const types = codeTypes.get(fn.name);
    if (types) fn.codeTypes = types;
  }
  return { manifest, raw, functionFiles: files, warnings };
}

/**
 * Checks the filters written in definitions against a model (injected by the CLI: the check is
 * runtime code, DESIGN §2). Returns one problem per bad filter.
 */
export type FilterCheck = (manifest: AppManifest) => FilterProblem[] | Promise<FilterProblem[]>;

const filterDiagnostics = (problems: FilterProblem[]): Diagnostic[] => problems.map((p) => ({ code: 'DEF_INVALID_FILTER', ...p }));

/**
 * The part of an app that is valid on its own: `raw` without every definition file that has a problem,
 * then without every file that breaks because of that removal (repeated until none does), normalised.
 * @returns undefined when svc.json or the database URL is wrong, or nothing is left to check
 */
function validPart(raw: RawApp, diagnostics: Diagnostic[], env: NodeJS.ProcessEnv): AppManifest | undefined {
  let bad = new Set(diagnostics.map((d) => d.file));
  let part = raw;
  for (let round = 0; round < 10; round++) {
    if (bad.has('svc.json') || !part.svc) return undefined;
    const keep = <T extends RawFile>(files: T[]) => files.filter((f) => !bad.has(f.file));
    part = {
      ...part,
      collections: keep(part.collections),
      views: keep(part.views),
      queries: keep(part.queries),
      externals: keep(part.externals),
      triggers: keep(part.triggers ?? []),
      functions: [],
      codeFiles: [],
      loadDiagnostics: [],
    };
    const left = validateApp(part, env);
    if (left.length === 0) break;
    bad = new Set(left.map((d) => d.file));
    if (round === 9) return undefined;
  }
  try {
    return normaliseModel(part, env);
  } catch {
    return undefined; // a model that cannot be built has nothing more to report
  }
}

/** The last code types read in this process, by what they were read from (see `codeTypesOf`). */
let lastCodeTypes: { key: string; types: Map<string, FunctionCodeTypes> } | undefined;

/**
 * `readCodeTypes` of the app, remembered for the same function files and code texts: a long-lived
 * process (`svc dev`) skips the TypeScript program, the slowest step, when no function code changed.
 */
function codeTypesOf(raw: RawApp): Map<string, FunctionCodeTypes> {
  const refs = raw.functions.map((f) => ({ name: (f.data as { name: string }).name, codeFile: f.codeFile }));
  const hash = createHash('sha256').update(`${raw.appDir}\0${JSON.stringify(refs)}\0`);
  for (const c of raw.codeFiles) hash.update(`${c.file}\0${c.text}\0`);
  const key = hash.digest('hex');
  if (lastCodeTypes?.key !== key) lastCodeTypes = { key, types: readCodeTypes(raw.appDir, refs) };
  // Copies: the caller puts them into its manifest, which later steps may change.
  return new Map([...lastCodeTypes.types].map(([name, types]) => [name, structuredClone(types)]));
}

/** What `loadAndValidate` returns. */
export interface LoadedApp {
  manifest: AppManifest;
  raw: RawApp;
  /** Compiled function code and shared modules: `functions/<path>.js|.mjs|.cjs` (relative to `.svc/`) → source. */
  functionFiles: Record<string, string>;
  /** Problems that do not stop generation; the CLI prints them. */
  warnings: Diagnostic[];
}
