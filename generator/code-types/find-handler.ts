/**
 * @module Finds the default-export handler of a function file with ts-morph (SPEC §4.8 rules 4 and 7):
 * whether the file is in default-export form at all (script form has no default export), and whether
 * the handler assigns `ctx.res` (then its return type is ignored). Syntax only; types are read elsewhere.
 */
import { Node, SyntaxKind, type ParameterDeclaration, type SourceFile } from 'ts-morph';

/** What the type reader needs to know about a default-export function file. */
export interface HandlerInfo {
  /** true when the handler assigns `ctx.res` or one of its fields (`ctx.res = ...`, `ctx.res.status = ...`). */
  assignsRes: boolean;
  /** true when the file exports a type or interface named `Input` / `Output`. */
  exportsInput: boolean;
  exportsOutput: boolean;
}

type FunctionLike = Node & { getParameters(): ParameterDeclaration[] };

/** Unwraps `(x)`, `x as T`, `x satisfies T` and follows an identifier to its function or initializer. */
function resolveFunction(node: Node | undefined, depth = 0): FunctionLike | undefined {
  if (!node || depth > 5) return undefined;
  if (Node.isArrowFunction(node) || Node.isFunctionExpression(node) || Node.isFunctionDeclaration(node)) return node;
  if (Node.isParenthesizedExpression(node) || Node.isAsExpression(node) || Node.isSatisfiesExpression(node)) {
    return resolveFunction(node.getExpression(), depth + 1);
  }
  if (Node.isExportAssignment(node)) return resolveFunction(node.getExpression(), depth + 1);
  if (Node.isVariableDeclaration(node)) return resolveFunction(node.getInitializer(), depth + 1);
  if (Node.isIdentifier(node)) {
    const decl = node.getSymbol()?.getDeclarations()[0];
    return resolveFunction(decl, depth + 1);
  }
  return undefined;
}

/** Names through which the handler reaches its response: `ctx.res` (ctx param) or a destructured `res`. */
function assignsResponse(fn: FunctionLike): boolean {
  const param = fn.getParameters()[0];
  if (!param) return false;
  const nameNode = param.getNameNode();
  let isRes: (target: Node) => boolean;
  if (Node.isIdentifier(nameNode)) {
    const ctx = nameNode.getText();
    isRes = (t) => Node.isPropertyAccessExpression(t) && t.getName() === 'res' && t.getExpression().getText() === ctx;
  } else if (Node.isObjectBindingPattern(nameNode)) {
    const el = nameNode.getElements().find((e) => (e.getPropertyNameNode()?.getText() ?? e.getName()) === 'res');
    if (!el) return false;
    const local = el.getName();
    isRes = (t) => Node.isIdentifier(t) && t.getText() === local;
  } else {
    return false;
  }
  return fn.getDescendantsOfKind(SyntaxKind.BinaryExpression).some((b) => {
    if (b.getOperatorToken().getKind() !== SyntaxKind.EqualsToken) return false;
    // ctx.res = ..., or ctx.res.<field> = ... / ctx.res['field'] = ...
    let target: Node = b.getLeft();
    for (;;) {
      if (isRes(target)) return true;
      if (Node.isPropertyAccessExpression(target) || Node.isElementAccessExpression(target)) target = target.getExpression();
      else return false;
    }
  });
}

/**
 * Inspects a function file.
 * @returns null for script form (no default export) or when the default export is not a function
 *   whose code can be found (e.g. a re-export); otherwise what the type reader needs
 * Source: SPEC §4.8 rules 4 (two forms) and 7 (types read from code).
 */
export function findHandler(file: SourceFile): HandlerInfo | null {
  const symbol = file.getDefaultExportSymbol();
  if (!symbol) return null;
  const fn = resolveFunction(symbol.getDeclarations()[0]);
  if (!fn) return null;
  const exported = file.getExportedDeclarations();
  const isType = (name: string) => (exported.get(name) ?? []).some((d) => Node.isTypeAliasDeclaration(d) || Node.isInterfaceDeclaration(d));
  return { assignsRes: assignsResponse(fn), exportsInput: isType('Input'), exportsOutput: isType('Output') };
}
