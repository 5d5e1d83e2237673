/**
 * @module The `typescript` package for the generator (function compilation, code types, the optional
 * Prisma client), loaded with `require` on first use. Importing its 9 MB CommonJS file as an ES module
 * made Node detect its format and lex it for named exports (about 0.3 s more CPU), and an app without
 * function code never needs it at all (0.4 s of a 2 s `svc generate`).
 * Types come from `import type * as TS from 'typescript'` where a file needs them.
 */
import { createRequire } from 'node:module';
import type * as TypeScript from 'typescript';

let loaded: typeof TypeScript | undefined;

/**
 * The TypeScript compiler API (the package's `module.exports`), loaded when a property is first read:
 * `ts.transpileModule(…)` works as with a static import, but a module that merely imports `ts` costs
 * nothing. Do not read `ts.X` at a module's top level (that loads it at import).
 */
export const ts = new Proxy({} as typeof TypeScript, {
  get: (_, key) => (loaded ??= createRequire(import.meta.url)('typescript') as typeof TypeScript)[key as keyof typeof TypeScript],
});
