/**
 * @module Finds the default-export handler of a function file (SPEC §4.8 rules 4 and 7): whether the
 * file is in default-export form at all (script form has no default export), and whether the handler
 * assigns `ctx.res` (then its return type is ignored). Syntax, and the checker only to follow names.
 */
import type * as TS from 'typescript';
import { ts } from '../typescript.js';

/** What the type reader needs to know about a default-export function file. */
export interface HandlerInfo {
  /** true when the handler assigns `ctx.res` or one of its fields (`ctx.res = ...`, `ctx.res.status = ...`). */
  assignsRes: boolean;
  /** true when the file exports a type or interface named `Input` / `Output`. */
  exportsInput: boolean;
  exportsOutput: boolean;
}

type FunctionLike = TS.ArrowFunction | TS.FunctionExpression | TS.FunctionDeclaration;

/** Unwraps `(x)`, `x as T`, `x satisfies T` and follows an identifier to its function or initializer. */
function resolveFunction(checker: TS.TypeChecker, node: TS.Node | undefined, depth = 0): FunctionLike | undefined {
  if (!node || depth > 5) return undefined;
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isFunctionDeclaration(node)) return node;
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node) || ts.isExportAssignment(node)) {
    return resolveFunction(checker, node.expression, depth + 1);
  }
  if (ts.isVariableDeclaration(node)) return resolveFunction(checker, node.initializer, depth + 1);
  if (ts.isIdentifier(node)) return resolveFunction(checker, checker.getSymbolAtLocation(node)?.getDeclarations()?.[0], depth + 1);
  return undefined;
}

/** Names through which the handler reaches its response: `ctx.res` (ctx param) or a destructured `res`. */
function assignsResponse(fn: FunctionLike): boolean {
  const param = fn.parameters[0];
  if (!param) return false;
  const nameNode = param.name;
  let isRes: (target: TS.Node) => boolean;
  if (ts.isIdentifier(nameNode)) {
    const ctx = nameNode.text;
    isRes = (t) => ts.isPropertyAccessExpression(t) && t.name.text === 'res' && ts.isIdentifier(t.expression) && t.expression.text === ctx;
  } else if (ts.isObjectBindingPattern(nameNode)) {
    const el = nameNode.elements.find((e) => (e.propertyName ?? e.name).getText() === 'res');
    if (!el || !ts.isIdentifier(el.name)) return false;
    const local = el.name.text;
    isRes = (t) => ts.isIdentifier(t) && t.text === local;
  } else {
    return false;
  }
  // ctx.res = ..., or ctx.res.<field> = ... / ctx.res['field'] = ...
  const assigns = (b: TS.Node): boolean => {
    if (!ts.isBinaryExpression(b) || b.operatorToken.kind !== ts.SyntaxKind.EqualsToken) return false;
    for (let target: TS.Node = b.left; ; target = target.expression) {
      if (isRes(target)) return true;
      if (!ts.isPropertyAccessExpression(target) && !ts.isElementAccessExpression(target)) return false;
    }
  };
  const visit = (n: TS.Node): boolean | undefined => assigns(n) || ts.forEachChild(n, visit);
  return ts.forEachChild(fn, visit) === true;
}

/**
 * Inspects a function file of `checker`'s program.
 * @returns null for script form (no default export) or when the default export is not a function
 *   whose code can be found (e.g. a re-export); otherwise what the type reader needs
 * Source: SPEC §4.8 rules 4 (two forms) and 7 (types read from code).
 */
export function findHandler(checker: TS.TypeChecker, file: TS.SourceFile): HandlerInfo | null {
  const module = checker.getSymbolAtLocation(file);
  const exports = module ? checker.getExportsOfModule(module) : [];
  const symbol = exports.find((e) => e.getName() === 'default');
  const fn = resolveFunction(checker, symbol?.getDeclarations()?.[0]);
  if (!fn) return null;
  const isType = (name: string) => {
    const found = exports.find((e) => e.getName() === name);
    const target = found && found.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(found) : found;
    return (target?.getDeclarations() ?? []).some((d) => ts.isTypeAliasDeclaration(d) || ts.isInterfaceDeclaration(d));
  };
  return { assignsRes: assignsResponse(fn), exportsInput: isType('Input'), exportsOutput: isType('Output') };
}
