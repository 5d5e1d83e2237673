/**
 * @module The `typescript` package for the generator (function compilation, code types, the optional
 * Prisma client), loaded with `require`. Importing its 9 MB CommonJS file as an ES module made Node
 * detect its format and lex it for named exports: about 0.3 s more CPU on every `svc generate`.
 * Types come from `import type * as TS from 'typescript'` where a file needs them.
 */
import { createRequire } from 'node:module';
import type * as TypeScript from 'typescript';

/** The TypeScript compiler API (the package's `module.exports`). */
export const ts = createRequire(import.meta.url)('typescript') as typeof TypeScript;
