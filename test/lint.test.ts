/**
 * ESLint and Prettier as part of `npm test` (issue 9): every file is formatted, the whole repo lints with zero errors and zero warnings under
 * eslint.config.js, and the layer rules of DESIGN §2 / STYLE §2 really fire: each forbidden import,
 * linted as if it were a file in that folder, is reported by `no-restricted-imports` with its reason,
 * and each allowed one is not. Prettier and the console's tsc run as child processes started with
 * the file, so they work beside ESLint (which runs in this process) instead of after it.
 *
 * All three keep their own caches in `.tmp/lint-cache/` (git-ignored), keyed by file contents and
 * settings, so a run re-checks only what changed since the last run on this checkout: ESLint's cache
 * (`cacheStrategy: 'content'`; every rule in eslint.config.js looks at one file at a time), Prettier's
 * `--cache --cache-strategy content`, and tsc's `--incremental` build info. A change of config or
 * tool version invalidates them; a fresh checkout checks everything.
 */
import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './support/cli.js';

const CACHE = join(ROOT, '.tmp/lint-cache');
const eslint = new ESLint({ cwd: ROOT, cache: true, cacheLocation: join(CACHE, 'eslint'), cacheStrategy: 'content' });

/**
 * Runs `node <args>` in ROOT; resolves to what it printed (stdout, then stderr), or to the error when it
 * failed without printing anything (so a crash never reads as "no problems").
 */
function nodeOutput(args: string[]): Promise<string> {
  return new Promise((ok) => {
    execFile(process.execPath, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      ok(stdout + stderr || (err ? String(err) : '')),
    );
  });
}

// Started now, awaited by their tests. prettier --check exits non-zero and names the files when any is not formatted.
const prettierOutput = nodeOutput([
  join(ROOT, 'node_modules/prettier/bin/prettier.cjs'),
  '--check',
  '.',
  '--log-level',
  'warn',
  '--cache',
  '--cache-strategy',
  'content',
  '--cache-location',
  join(CACHE, 'prettier'),
]);
const consoleTscOutput = nodeOutput([
  join(ROOT, 'node_modules/typescript/bin/tsc'),
  '-p',
  'console/tsconfig.json',
  '--incremental',
  '--tsBuildInfoFile',
  join(CACHE, 'console.tsbuildinfo'),
]);

/** The `no-restricted-imports` messages ESLint gives `code` as the file `path` (relative to ROOT). */
async function restricted(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport const probe = 1;\n`, { filePath: `${ROOT}/${path}` });
  return result.messages.filter((m) => m.ruleId?.endsWith('no-restricted-imports')).map((m) => m.message);
}

describe('lint', () => {
  it('the repo has no ESLint errors or warnings', async () => {
    const results = await eslint.lintFiles(['.']);
    const problems = results.flatMap((r) => r.messages.map((m) => `${r.filePath.slice(ROOT.length + 1)}:${m.line}:${m.column} ${m.ruleId}: ${m.message}`));
    expect(problems).toEqual([]);
    expect(results.length).toBeGreaterThan(100); // it did lint the sources, not an empty set
  }, 180_000);

  it('every file is formatted as .prettierrc.json says (npm run format)', async () => {
    expect((await prettierOutput).trim()).toBe('');
  }, 180_000);

  it('the console (console/, TSX for the browser, outside the root tsconfig) typechecks', async () => {
    expect((await consoleTscOutput).trim()).toBe('');
  }, 180_000);

  it('runtime may not import the generator, templates, schemas or cli', async () => {
    expect(await restricted('runtime/data/probe.ts', "import { generate } from '../../generator/index.js';")).toEqual([
      expect.stringContaining('never imports the generator'),
    ]);
    expect(await restricted('runtime/probe.ts', "import x from '../templates/init/svc.json';")).toEqual([expect.stringContaining('templates/')]);
    expect(await restricted('runtime/query/probe.ts', "import s from '../../schemas/collection.schema.json';")).toEqual([
      expect.stringContaining('JSON Schemas'),
    ]);
    expect(await restricted('runtime/probe.ts', "import '../cli/index.js';")).toEqual([expect.stringContaining('CLI')]);
    expect(await restricted('runtime/data/probe.ts', "import { HttpError } from '../errors.js';\nimport express from 'express';")).toEqual([]);
  });

  it('runtime/auth may not import express', async () => {
    expect(await restricted('runtime/auth/probe.ts', "import type { Request } from 'express';")).toEqual([expect.stringContaining('framework-free')]);
    expect(await restricted('runtime/auth/probe.ts', "import { generate } from '../../generator/index.js';")).toEqual([
      expect.stringContaining('never imports the generator'),
    ]);
    expect(await restricted('runtime/http/probe.ts', "import type { Request } from 'express';")).toEqual([]);
  });

  it('runtime/contract imports nothing outside itself', async () => {
    expect(await restricted('runtime/contract/probe.ts', "import type { AppManifest } from './manifest.js';")).toEqual([]);
    expect(await restricted('runtime/contract/probe.ts', "import { HttpError } from '../errors.js';")).toEqual([
      expect.stringContaining('nothing outside itself'),
    ]);
    expect(await restricted('runtime/contract/probe.ts', "import { readFileSync } from 'node:fs';")).toEqual([
      expect.stringContaining('nothing outside itself'),
    ]);
    expect(await restricted('runtime/contract/probe.ts', "import express from 'express';")).toEqual([expect.stringContaining('nothing outside itself')]);
  });

  it('generator reaches the runtime only through runtime/index.ts (type-only) or runtime/contract', async () => {
    expect(await restricted('generator/emit/probe.ts', "import type { AppManifest } from '../../runtime/index.js';")).toEqual([]);
    expect(await restricted('generator/probe.ts', "import type { AppManifest } from '../runtime/contract/manifest.js';")).toEqual([]);
    expect(await restricted('generator/emit/probe.ts', "import { compileFilter } from '../../runtime/query/filter-compile.js';")).toEqual([
      expect.stringContaining('never its internals'),
    ]);
    expect(await restricted('generator/emit/probe.ts', "import type { Caller } from '../../runtime/auth/caller.js';")).toEqual([
      expect.stringContaining('never its internals'),
    ]);
    expect(await restricted('generator/probe.ts', "import { startServer } from '../runtime/index.js';")).toEqual([expect.stringContaining('type-only')]);
    expect(await restricted('generator/probe.ts', "import '../cli/index.js';")).toEqual([expect.stringContaining('CLI imports the generator')]);
  });

  it('cli uses the public entries only', async () => {
    expect(await restricted('cli/probe.ts', "import { generate } from '../generator/index.js';\nimport { startServer } from '../runtime/index.js';")).toEqual(
      [],
    );
    expect(await restricted('cli/probe.ts', "import { loadApp } from '../generator/load/load-app.js';")).toEqual([expect.stringContaining('public entries')]);
  });
});
