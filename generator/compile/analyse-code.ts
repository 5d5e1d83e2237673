/**
 * @module Reads facts from one function code file's syntax tree (TypeScript parser, no type checking):
 * whether it has a default export (which form it is, SPEC §4.8 rule 4), where it assigns a bare global
 * `res` (ignored in the default-export form, so `svc generate` warns), and the relative module
 * specifiers of compiled output (rewritten to the compiled file names).
 */
import type * as TS from 'typescript';
import { ts } from '../typescript.js';

/** The parser's script kind for a code file name (`.tsx` → TSX, `.js .mjs .cjs` → JS, else TS). */
export function scriptKindOf(file: string): TS.ScriptKind {
  if (file.endsWith('.tsx')) return ts.ScriptKind.TSX;
  if (/\.[cm]?js$/.test(file)) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

/** Parses a code file (syntax only; `parseDiagnostics` are not read here, `transpileModule` reports them). */
export function parseCode(file: string, text: string): TS.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, scriptKindOf(file));
}

/** 1-based line of a position. */
export function lineOf(sf: TS.SourceFile, pos: number): number {
  return sf.getLineAndCharacterOfPosition(pos).line + 1;
}

const hasModifier = (node: TS.Node, kind: TS.SyntaxKind): boolean => ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind);

/** True when `expr` is `module.exports` or `exports.default`. */
function isCommonJsExport(expr: TS.Expression): boolean {
  if (!ts.isPropertyAccessExpression(expr) || !ts.isIdentifier(expr.expression)) return false;
  return (expr.expression.text === 'module' && expr.name.text === 'exports') || (expr.expression.text === 'exports' && expr.name.text === 'default');
}

/**
 * Whether the file is in the default-export form: `export default …`, `export { x as default }`, or in
 * CommonJS `module.exports = …` / `exports.default = …` at the top level.
 */
export function hasDefaultExport(sf: TS.SourceFile): boolean {
  return sf.statements.some((s) => {
    if (ts.isExportAssignment(s)) return true;
    if (hasModifier(s, ts.SyntaxKind.ExportKeyword) && hasModifier(s, ts.SyntaxKind.DefaultKeyword)) return true;
    if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) {
      return s.exportClause.elements.some((e) => e.name.text === 'default');
    }
    return (
      ts.isExpressionStatement(s) &&
      ts.isBinaryExpression(s.expression) &&
      s.expression.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
      isCommonJsExport(s.expression.left)
    );
  });
}

/**
 * The line of the first assignment to the bare global `res` (`res = …`, `res.status = …`), or undefined
 * when there is none or the file declares a binding named `res` anywhere (then `res` is not the global).
 */
export function bareResAssignmentLine(sf: TS.SourceFile): number | undefined {
  let declared = false;
  let line: number | undefined;
  const visit = (node: TS.Node): void => {
    if (
      (ts.isVariableDeclaration(node) ||
        ts.isParameter(node) ||
        ts.isBindingElement(node) ||
        ts.isFunctionDeclaration(node) ||
        ts.isClassDeclaration(node) ||
        ts.isImportSpecifier(node) ||
        ts.isImportClause(node) ||
        ts.isNamespaceImport(node)) &&
      node.name &&
      ts.isIdentifier(node.name) &&
      node.name.text === 'res' &&
      !isAmbient(node)
    ) {
      declared = true;
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment && node.operatorToken.kind <= ts.SyntaxKind.LastAssignment) {
      let target: TS.Expression = node.left;
      while (ts.isPropertyAccessExpression(target) || ts.isElementAccessExpression(target) || ts.isParenthesizedExpression(target)) target = target.expression;
      if (ts.isIdentifier(target) && target.text === 'res') line ??= lineOf(sf, node.getStart(sf));
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return declared ? undefined : line;
}

/** `declare let res` names the global, it does not declare a binding of its own. */
function isAmbient(node: TS.Node): boolean {
  const statement = ts.isVariableDeclaration(node) ? node.parent.parent : node;
  return hasModifier(statement, ts.SyntaxKind.DeclareKeyword);
}

/** A module specifier string literal in a file: its text and the span of the literal (quotes included). */
export interface Specifier {
  text: string;
  start: number;
  end: number;
}

/** Every static module specifier: `import … from`, `export … from`, `import('…')` with a string literal. */
export function moduleSpecifiers(sf: TS.SourceFile): Specifier[] {
  const out: Specifier[] = [];
  const add = (lit: TS.Node | undefined): void => {
    if (lit && ts.isStringLiteralLike(lit)) out.push({ text: lit.text, start: lit.getStart(sf), end: lit.getEnd() });
  };
  const visit = (node: TS.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}
