/**
 * @module Reads advisory request/response/query types from function code (SPEC §4.8 rule 7) with the
 * TypeScript compiler API (which file is in default-export form, which type answers which side) and
 * typescript-json-schema (the JSON Schema of that type), in one TypeScript program for the whole app:
 * the code files and a synthetic file of type aliases, one per candidate type of each side.
 *
 * Order per side: body = the context's `TBody`, else `export type Input`; response = `TRes`, else the
 * handler's (awaited) return type unless the code assigns `ctx.res`, else `export type Output`;
 * query = `TQuery` only when narrowed from the default `FunctionQuery`. A chosen type that does not
 * convert fully becomes `{ "type": "object" }`. Script-form files, `.d.ts` and test files are skipped.
 * `svc/runtime` resolves to this package's runtime types wherever the app folder is.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type * as TS from 'typescript';
import type * as Tjs from 'typescript-json-schema';
import { ts } from '../typescript.js';
import type { FunctionCodeTypes, JsonSchema } from '../../runtime/index.js';
import { cleanSchema } from './clean-schema.js';
import { isJsonConvertible } from './convertible.js';
import { findHandler, type HandlerInfo } from './find-handler.js';

/** A function whose code may carry types: its name and code file relative to the app folder. */
export interface CodeFileRef {
  name: string;
  codeFile: string | null;
}

const RUNTIME_TYPES = fileURLToPath(new URL('../../runtime/index', import.meta.url));
const OPAQUE: JsonSchema = { type: 'object' };
const SIDES = ['body', 'response', 'query'] as const;
type Side = (typeof SIDES)[number];
const SYNTHETIC = 'functions/__svc_code_types__.ts';

/** `.d.ts`, `*.test.*`, `*.spec.*` are never function code (SPEC §4.8 rule 7). */
const isSkippedFile = (file: string) => /\.d\.[cm]?ts$|\.(test|spec)\.[cm]?[jt]sx?$/.test(file);

/** A candidate type of one side: its expression, and whether the handler's shape lets it count. */
interface Candidate {
  expr: string;
  counts: (info: HandlerInfo) => boolean;
}

/**
 * One function's candidate type expressions per side, in SPEC order (first usable wins). All of them go
 * into the synthetic file before the handler is inspected (one program); `counts` drops the ones its
 * shape rules out (an `Input` it does not export, a return type when it assigns `ctx.res`).
 */
function candidates(fnIndex: number): Record<Side, Candidate[]> {
  const m = `M${fnIndex}`;
  const ctx = `Parameters<typeof ${m}.default>[0]`;
  const always = () => true;
  return {
    body: [
      { expr: `Exclude<${ctx}['req']['bodyJson'], null>`, counts: always },
      { expr: `${m}.Input`, counts: (i) => i.exportsInput },
    ],
    response: [
      { expr: `Exclude<${ctx}['res']['bodyJson'], undefined>`, counts: always },
      { expr: `Awaited<ReturnType<typeof ${m}.default>>`, counts: (i) => !i.assignsRes },
      { expr: `${m}.Output`, counts: (i) => i.exportsOutput },
    ],
    query: [{ expr: `${ctx}['req']['query']`, counts: always }],
  };
}

/** true when a candidate type says something: not any/unknown/never/void/undefined, nor the default query. */
function isUsable(side: Side, t: TS.Type): boolean {
  const { Any, Unknown, Undefined, Never, Void } = ts.TypeFlags;
  if ([Any, Unknown, Undefined, Never, Void].some((flag) => (t.flags & flag) === flag)) return false;
  if (side === 'query' && t.getSymbol()?.getName() === 'FunctionQuery') return false;
  return true;
}

/** Built on first use: reading `ts` loads TypeScript (see generator/typescript.ts). */
const compilerOptions = (): TS.CompilerOptions => ({
  allowJs: true,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  allowImportingTsExtensions: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  jsx: ts.JsxEmit.Preserve,
  types: [],
  paths: { 'svc/runtime': [RUNTIME_TYPES] },
});

/** A program of the code files and the synthetic file `syntheticPath` (not on disk) holding `text`. */
function createProgram(codeFiles: string[], syntheticPath: string, text: string): TS.Program {
  const options = compilerOptions();
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === syntheticPath ? ts.createSourceFile(name, text, language, true, ts.ScriptKind.TS) : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === syntheticPath || fileExists.call(host, name);
  host.readFile = (name) => (name === syntheticPath ? text : readFile.call(host, name));
  return ts.createProgram({ rootNames: [...codeFiles, syntheticPath], options, host });
}

/** typescript-json-schema warns on stdout about initializers it cannot evaluate; generate output stays clean. */
function quietly<T>(run: () => T): T {
  const { warn, error } = console;
  console.warn = () => undefined;
  console.error = () => undefined;
  try {
    return run();
  } finally {
    console.warn = warn;
    console.error = error;
  }
}

/**
 * Reads the code types of every function of an app.
 * @param appDir - absolute path of the app folder
 * @param functions - names and code files (`functions/<name>.<ext>` relative to `appDir`)
 * @returns function name → its code types, only for default-export files with at least one side;
 *   deterministic for the same sources
 * @throws never for problems in the code (type errors are ignored: types are advisory)
 * Source: SPEC §4.8 rule 7; DESIGN §3 (function code files).
 */
export function readCodeTypes(appDir: string, functions: CodeFileRef[]): Map<string, FunctionCodeTypes> {
  const result = new Map<string, FunctionCodeTypes>();
  const files = functions.filter((f): f is CodeFileRef & { codeFile: string } => f.codeFile !== null && !isSkippedFile(f.codeFile));
  if (files.length === 0) return result;
  const paths = files.map((f) => join(appDir, f.codeFile));
  const syntheticPath = join(appDir, SYNTHETIC);
  const lines: string[] = [];
  const aliasesOf = files.map((f, index) => {
    lines.push(`import type * as M${index} from './${f.codeFile.slice('functions/'.length)}';`);
    const bySide = candidates(index);
    const names = {} as Record<Side, { alias: string; counts: Candidate['counts'] }[]>;
    for (const side of SIDES) {
      names[side] = bySide[side].map(({ expr, counts }, i) => {
        const alias = `SvcCodeType${index}_${side}_${i}`;
        lines.push(`export type ${alias} = ${expr};`);
        return { alias, counts };
      });
    }
    return names;
  });
  const program = createProgram(paths, syntheticPath, `${lines.join('\n')}\n`);
  const checker = program.getTypeChecker();
  const synthetic = program.getSourceFile(syntheticPath)!;
  const aliases = new Map<string, TS.TypeAliasDeclaration>();
  for (const statement of synthetic.statements) if (ts.isTypeAliasDeclaration(statement)) aliases.set(statement.name.text, statement);
  const chosen = new Map<string, Partial<Record<Side, { alias: string; convertible: boolean }>>>();
  files.forEach((f, index) => {
    const source = program.getSourceFile(paths[index]);
    const info = source && findHandler(checker, source);
    if (!info) return;
    const sides: Partial<Record<Side, { alias: string; convertible: boolean }>> = {};
    for (const side of SIDES) {
      for (const { alias, counts } of aliasesOf[index][side]) {
        if (!counts(info)) continue;
        const type = checker.getTypeAtLocation(aliases.get(alias)!);
        if (!isUsable(side, type)) continue;
        sides[side] = { alias, convertible: isJsonConvertible(checker, type, synthetic) };
        break;
      }
    }
    if (Object.keys(sides).length > 0) chosen.set(f.name, sides);
  });
  if (chosen.size === 0) return result;
  // Loaded here, not imported: it loads TypeScript, which an app without function code never needs.
  const { buildGenerator } = createRequire(import.meta.url)('typescript-json-schema') as typeof Tjs;
  const generator = quietly(() => buildGenerator(program, { required: true, ignoreErrors: true, ref: false, aliasRef: false, topRef: false }, [syntheticPath]));
  for (const [name, sides] of chosen) {
    const types: FunctionCodeTypes = {};
    for (const side of SIDES) {
      const pick = sides[side];
      if (!pick) continue;
      types[side] = pick.convertible && generator ? toSchema(() => generator.getSchemaForSymbol(pick.alias)) : { ...OPAQUE };
    }
    result.set(name, types);
  }
  return result;
}

/** The cleaned schema, or the opaque object when the library fails or leaves references behind. */
function toSchema(generate: () => unknown): JsonSchema {
  try {
    const schema = cleanSchema(quietly(generate));
    const text = JSON.stringify(schema);
    return text === '{}' || text.includes('"$ref"') ? { ...OPAQUE } : schema;
  } catch {
    return { ...OPAQUE };
  }
}
