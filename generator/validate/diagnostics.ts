/**
 * @module Generator diagnostics: one problem in an app's definition files, the error that carries all of
 * them, and the one-line rendering `file: /json/pointer: message` (STYLE §4). Diagnostics are collected,
 * never thrown one by one; `DefinitionError` is thrown once with the whole list.
 */

/** One problem in an app's definition files. */
export interface Diagnostic {
  /** `DEF_` + UPPER_SNAKE, e.g. `DEF_UNKNOWN_FIELD_TYPE`. */
  code: string;
  /** Human message naming the offending key or value. */
  message: string;
  /** Path relative to the app folder with forward slashes, e.g. `collections/Order.json`. */
  file: string;
  /** JSON Pointer (RFC 6901) into the file, `''` for the whole file. */
  path: string;
  /** 1-based line, when known (JSON syntax errors; the message names it too). */
  line?: number;
}

/**
 * Every problem found in an app's definitions, thrown once by `loadAndValidate`.
 * Message: `"<N> problem(s) in app definitions"`; the list is in `diagnostics`.
 * Source: STYLE §4 (generator errors), DESIGN §3a (`svc generate` names file and JSON path).
 */
export class DefinitionError extends Error {
  readonly diagnostics: Diagnostic[];

  constructor(diagnostics: Diagnostic[]) {
    const n = diagnostics.length;
    super(`${n} ${n === 1 ? 'problem' : 'problems'} in app definitions`);
    this.name = 'DefinitionError';
    this.diagnostics = diagnostics;
  }
}

/**
 * Renders a diagnostic as one line: `file: /json/pointer: message`, or `file: message` when the path is
 * `''`. Example: `collections/Order.json: /properties/customer/collection: lookup target "Custmer" is not
 * a collection`.
 */
export function formatDiagnostic(d: Diagnostic): string {
  return d.path === '' ? `${d.file}: ${d.message}` : `${d.file}: ${d.path}: ${d.message}`;
}

/** Escapes one JSON Pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`). */
export function pointerSegment(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Builds a JSON Pointer from segments: `pointer('properties', 'a/b')` → `/properties/a~1b`. */
export function pointer(...segments: (string | number)[]): string {
  return segments.map((s) => `/${pointerSegment(s)}`).join('');
}

/** Sorts diagnostics by file (code-unit order), keeping the order found within each file. */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics
    .map((d, i) => ({ d, i }))
    .sort((a, b) => (a.d.file < b.d.file ? -1 : a.d.file > b.d.file ? 1 : a.i - b.i))
    .map(({ d }) => d);
}
