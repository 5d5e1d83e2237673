/**
 * @module Reads advisory request/response/query types from function code (SPEC §4.8 rule 7) with
 * ts-morph (which file is in default-export form, which type answers which side) and
 * typescript-json-schema (the JSON Schema of that type), in one TypeScript program for the whole app.
 *
 * Order per side: body = the context's `TBody`, else `export type Input`; response = `TRes`, else the
 * handler's (awaited) return type unless the code assigns `ctx.res`, else `export type Output`;
 * query = `TQuery` only when narrowed from the default `FunctionQuery`. A chosen type that does not
 * convert fully becomes `{ "type": "object" }`. Script-form files, `.d.ts` and test files are skipped.
 * `svc/runtime` resolves to this package's runtime types wherever the app folder is.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Project, ts, type SourceFile, type Type } from 'ts-morph';
import { buildGenerator } from 'typescript-json-schema';
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

/** One function's candidate type expressions per side, in SPEC order (first usable wins). */
function candidates(fnIndex: number, info: HandlerInfo): Record<Side, string[]> {
  const m = `M${fnIndex}`;
  const ctx = `Parameters<typeof ${m}.default>[0]`;
  return {
    body: [`Exclude<${ctx}['req']['bodyJson'], null>`, ...(info.exportsInput ? [`${m}.Input`] : [])],
    response: [
      `Exclude<${ctx}['res']['bodyJson'], undefined>`,
      ...(info.assignsRes ? [] : [`Awaited<ReturnType<typeof ${m}.default>>`]),
      ...(info.exportsOutput ? [`${m}.Output`] : []),
    ],
    query: [`${ctx}['req']['query']`],
  };
}

/** true when a candidate type says something: not any/unknown/never/void/undefined, nor the default query. */
function isUsable(side: Side, t: Type): boolean {
  if (t.isAny() || t.isUnknown() || t.isUndefined() || t.isNever() || t.isVoid()) return false;
  if (t.getText() === 'never' || t.getText() === 'void') return false;
  if (side === 'query' && t.getSymbol()?.getName() === 'FunctionQuery') return false;
  return true;
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
  const project = new Project({
    skipAddingFilesFromTsConfig: true,
    compilerOptions: {
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
    },
  });
  const handlers: { name: string; index: number; info: HandlerInfo }[] = [];
  files.forEach((f, index) => {
    const source = project.addSourceFileAtPath(join(appDir, f.codeFile));
    const info = findHandler(source);
    if (info) handlers.push({ name: f.name, index, info });
  });
  if (handlers.length === 0) return result;
  const lines: string[] = [];
  const aliasesOf = new Map<string, Record<Side, string[]>>();
  for (const h of handlers) {
    lines.push(`import type * as M${h.index} from './${files[h.index].codeFile.slice('functions/'.length)}';`);
    const bySide = candidates(h.index, h.info);
    const names = {} as Record<Side, string[]>;
    for (const side of SIDES) {
      names[side] = bySide[side].map((expr, i) => {
        const alias = `SvcCodeType${h.index}_${side}_${i}`;
        lines.push(`export type ${alias} = ${expr};`);
        return alias;
      });
    }
    aliasesOf.set(h.name, names);
  }
  const synthetic: SourceFile = project.createSourceFile(join(appDir, SYNTHETIC), `${lines.join('\n')}\n`, { overwrite: true });
  const chosen = new Map<string, Partial<Record<Side, { alias: string; convertible: boolean }>>>();
  for (const [name, names] of aliasesOf) {
    const sides: Partial<Record<Side, { alias: string; convertible: boolean }>> = {};
    for (const side of SIDES) {
      for (const alias of names[side]) {
        const type = synthetic.getTypeAliasOrThrow(alias).getType();
        if (!isUsable(side, type)) continue;
        sides[side] = { alias, convertible: isJsonConvertible(type, synthetic) };
        break;
      }
    }
    if (Object.keys(sides).length > 0) chosen.set(name, sides);
  }
  if (chosen.size === 0) return result;
  const generator = quietly(() =>
    buildGenerator(project.getProgram().compilerObject as never, { required: true, ignoreErrors: true, ref: false, aliasRef: false, topRef: false }, [
      synthetic.getFilePath(),
    ]),
  );
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
