/**
 * @module Reads an app folder (DESIGN §3): `svc.json` and every `*.json` definition, as parsed JSON with
 * its relative file name, plus which code file sits beside each function definition and the text of every
 * code file under `functions/`. This is the only
 * place that reads definition files; invalid JSON becomes a diagnostic, never an exception.
 */
import type { Dirent } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { Diagnostic } from '../validate/diagnostics.js';

/** One definition file as read: its path relative to the app folder and its parsed JSON. */
export interface RawFile {
  /** Relative path with forward slashes, e.g. `collections/Order.json`. */
  file: string;
  data: unknown;
}

/** A function definition file and the code file beside it. */
export interface RawFunctionFile extends RawFile {
  /** `functions/<name>.ts|.tsx|.js|.mjs|.cjs` (first found, in that order), or null when there is none. */
  codeFile: string | null;
}

/** A code file under `functions/` (any depth): a function's code or a shared module (SPEC §4.8 rule 5). */
export interface RawCodeFile {
  /** Relative path with forward slashes, e.g. `functions/lib/money.ts`. */
  file: string;
  text: string;
}

/** An app folder as read from disk, before validation. Every list is sorted by file name. */
export interface RawApp {
  /** Absolute path of the app folder. */
  appDir: string;
  /** `svc.json`, or null when it is missing or not valid JSON (a load diagnostic says which). */
  svc: RawFile | null;
  collections: RawFile[];
  views: RawFile[];
  queries: RawFile[];
  functions: RawFunctionFile[];
  externals: RawFile[];
  /** `triggers/*.json` (DESIGN §12); absent in apps built by hand (tests), meaning none. */
  triggers?: RawFile[];
  /**
   * Every code file under `functions/` and its subfolders (extensions of `FUNCTION_CODE_EXTENSIONS`),
   * without declaration files (`.d.ts`), tests (`*.test.*`, `*.spec.*`) and `node_modules/`.
   */
  codeFiles: RawCodeFile[];
  /** Problems met while reading: missing `svc.json`, unreadable files, invalid JSON. */
  loadDiagnostics: Diagnostic[];
}

/** Code file extensions of a function, in lookup order (SPEC §4.8 item 7). */
export const FUNCTION_CODE_EXTENSIONS = ['.ts', '.tsx', '.js', '.mjs', '.cjs'] as const;

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Reads an app folder: `svc.json` (required) and every `*.json` in `collections/`, `views/`, `queries/`,
 * `functions/`, `external/` and `triggers/` (missing folders are fine), each list sorted by file name (code-unit order).
 * @param appDir - the app folder (relative paths resolve against the current directory)
 * @returns the parsed files; problems (missing `svc.json` = `DEF_MISSING_SVC_JSON`, unreadable file =
 *   `DEF_UNREADABLE_FILE`, invalid JSON = `DEF_INVALID_JSON` with its line) are in `loadDiagnostics`
 * @throws never for problems in the folder's content; only for programming errors
 * Source: DESIGN §3 (the app folder), §3a (`svc generate`).
 */
export async function loadApp(appDir: string): Promise<RawApp> {
  const root = resolve(appDir);
  const diagnostics: Diagnostic[] = [];
  const svcText = await readText(root, 'svc.json', diagnostics);
  if (svcText === undefined && !diagnostics.length) {
    const folderExists = await stat(root).then(
      (s) => s.isDirectory(),
      () => false,
    );
    diagnostics.push({
      code: 'DEF_MISSING_SVC_JSON',
      file: 'svc.json',
      path: '',
      message: folderExists
        ? `svc.json not found: ${root} is not an app folder (svc.json with at least "name" is required)`
        : `${root} does not exist: an app folder holds svc.json with at least "name" (svc init <dir> writes one)`,
    });
  }
  const svc = svcText === undefined ? null : parseFile('svc.json', svcText, diagnostics);
  const folder = async (dir: string): Promise<{ files: RawFile[]; names: Set<string> }> => {
    const names = await listFiles(root, dir, diagnostics);
    const files: RawFile[] = [];
    for (const name of [...names].filter((n) => n.endsWith('.json')).sort(byCodeUnit)) {
      const text = await readText(root, `${dir}/${name}`, diagnostics);
      const parsed = text === undefined ? null : parseFile(`${dir}/${name}`, text, diagnostics);
      if (parsed) files.push(parsed);
    }
    return { files, names };
  };
  const fns = await folder('functions');
  const functions = fns.files.map((f): RawFunctionFile => {
    const base = f.file.slice('functions/'.length, -'.json'.length);
    const ext = FUNCTION_CODE_EXTENSIONS.find((e) => fns.names.has(base + e));
    return { ...f, codeFile: ext === undefined ? null : `functions/${base}${ext}` };
  });
  return {
    appDir: root,
    svc,
    collections: (await folder('collections')).files,
    views: (await folder('views')).files,
    queries: (await folder('queries')).files,
    functions,
    externals: (await folder('external')).files,
    triggers: (await folder('triggers')).files,
    codeFiles: await readCodeFiles(root, 'functions', diagnostics),
    loadDiagnostics: diagnostics,
  };
}

/** Whether a file name is function code or a shared module: a code extension, not a declaration or test file. */
export function isCodeFileName(name: string): boolean {
  return FUNCTION_CODE_EXTENSIONS.some((e) => name.endsWith(e)) && !/\.d\.[cm]?ts$/.test(name) && !/\.(test|spec)\.[a-z]+$/.test(name);
}

/** Every code file under `dir`, recursively, sorted by path (code-unit order). */
async function readCodeFiles(root: string, dir: string, diagnostics: Diagnostic[]): Promise<RawCodeFile[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true, recursive: true });
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') {
      diagnostics.push({ code: 'DEF_UNREADABLE_FILE', file: dir, path: '', message: `cannot read folder (${code ?? 'error'})` });
    }
    return [];
  }
  const files = entries
    .filter((e) => e.isFile() && isCodeFileName(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)).split(sep).join('/'))
    .filter((f) => !f.split('/').includes('node_modules'))
    .sort(byCodeUnit);
  const out: RawCodeFile[] = [];
  for (const file of files) {
    const text = await readText(root, file, diagnostics);
    if (text !== undefined) out.push({ file, text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text });
  }
  return out;
}

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

/** Names of the regular files in `dir` (empty when the folder does not exist). */
async function listFiles(root: string, dir: string, diagnostics: Diagnostic[]): Promise<Set<string>> {
  try {
    const entries = await readdir(join(root, dir), { withFileTypes: true });
    const names = new Set<string>();
    for (const e of entries) {
      if (e.isFile() || (e.isSymbolicLink() && (await stat(join(root, dir, e.name)).catch(() => null))?.isFile())) {
        names.add(e.name);
      }
    }
    return names;
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') {
      diagnostics.push({ code: 'DEF_UNREADABLE_FILE', file: dir, path: '', message: `cannot read folder (${code ?? 'error'})` });
    }
    return new Set();
  }
}

/** The file's text, or undefined when it does not exist (silently) or cannot be read (diagnostic). */
async function readText(root: string, file: string, diagnostics: Diagnostic[]): Promise<string | undefined> {
  try {
    return await readFile(join(root, file), 'utf8');
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'ENOENT') {
      diagnostics.push({ code: 'DEF_UNREADABLE_FILE', file, path: '', message: `cannot read file (${code ?? 'error'})` });
    }
    return undefined;
  }
}

function parseFile(file: string, text: string, diagnostics: Diagnostic[]): RawFile | null {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text; // editors may write a BOM
  try {
    return { file, data: JSON.parse(body) as unknown };
  } catch (err) {
    const reason = (err instanceof Error ? err.message : String(err)).replace(/ in JSON at position \d+.*$/s, '').replace(/, ".*" is not valid JSON$/s, '');
    const offset = jsonErrorOffset(body);
    if (offset < 0) {
      diagnostics.push({ code: 'DEF_INVALID_JSON', file, path: '', message: `not valid JSON: ${reason}` });
      return null;
    }
    const before = body.slice(0, offset);
    const line = before.split('\n').length;
    const column = offset - before.lastIndexOf('\n');
    diagnostics.push({
      code: 'DEF_INVALID_JSON',
      file,
      path: '',
      line,
      message: `not valid JSON at line ${line}, column ${column}: ${reason}`,
    });
    return null;
  }
}

/** Offset of the first JSON syntax error in `text`, or -1 when it parses (RFC 8259 grammar). */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const str = (): boolean => {
    for (i++; i < text.length; i++) {
      const c = text[i];
      if (c === '"') return ++i > 0;
      if (c < ' ') return false;
      if (c === '\\') {
        const e = text[++i];
        if (e === 'u' ? !/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5)) : !'"\\/bfnrt'.includes(e ?? 'x')) return false;
        if (e === 'u') i += 4;
      }
    }
    return false;
  };
  const list = (close: string, item: () => boolean): boolean => {
    i++;
    ws();
    if (text[i] === close) return ++i > 0;
    for (;;) {
      if (!item()) return false;
      ws();
      if (text[i] === close) return ++i > 0;
      if (text[i] !== ',') return false;
      i++;
    }
  };
  const value = (): boolean => {
    ws();
    const c = text[i];
    if (c === '{') {
      return list('}', () => {
        ws();
        if (text[i] !== '"' || !str()) return false;
        ws();
        return text[i] === ':' && ++i > 0 && value();
      });
    }
    if (c === '[') return list(']', value);
    if (c === '"') return str();
    for (const lit of ['true', 'false', 'null']) if (text.startsWith(lit, i)) return (i += lit.length) > 0;
    const num = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
    num.lastIndex = i;
    const m = num.exec(text);
    if (!m || m[0] === '-' || m[0] === '') return false;
    i += m[0].length;
    return true;
  };
  if (!value()) return i;
  ws();
  return i < text.length ? i : -1;
}
