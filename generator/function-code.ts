/**
 * @module The quick half of `svc generate` for an edit of function code only (`svc dev`, DESIGN §10):
 * reads the app folder, compiles every code file under `functions/` (syntax, imports, the script form)
 * and writes the compiled files that changed into `.svc/functions/`. It neither validates definitions
 * nor reads code types (the TypeScript program, the slowest step): `svc dev` runs the whole of
 * `generate` afterwards, when the edits pause, for `openapi.json` and the fingerprint.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { compileFunctions } from './compile/compile-functions.js';
import { loadApp } from './load/load-app.js';
import { DefinitionError } from './validate/diagnostics.js';

/**
 * Compiles the app's function code into `<appDir>/.svc/functions/`.
 * @returns the files written (changed or new), relative to `.svc/`
 * @throws DefinitionError with the code's problems (`DEF_FUNCTION_SYNTAX`, `DEF_UNRESOLVED_IMPORT`, …);
 *   nothing is written then
 * Source: SPEC §4.8 rules 4, 5; DESIGN §10.
 */
export async function emitFunctionCode(appDir: string): Promise<string[]> {
  const raw = await loadApp(resolve(appDir));
  const problems = [...raw.loadDiagnostics.filter((d) => d.file.startsWith('functions/')), ...compileFunctions(raw).diagnostics];
  if (problems.length > 0) throw new DefinitionError(problems);
  const svcDir = join(raw.appDir, '.svc');
  const written: string[] = [];
  for (const [path, text] of Object.entries(compileFunctions(raw).files)) {
    const full = join(svcDir, path);
    if (existsSync(full) && readFileSync(full, 'utf8') === text) continue;
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
    written.push(path);
  }
  return written;
}
