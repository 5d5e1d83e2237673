/**
 * @module The recursive-descent parser of the filter language (SPEC §4.3): filter text → `FilterNode`.
 * Grammar (keywords and operators case-insensitive, `and` binds tighter than `or`):
 *
 *     expr       := andExpr ('or' andExpr)*
 *     andExpr    := primary ('and' primary)*
 *     primary    := '(' expr ')' | comparison
 *     comparison := path op ['~'] literal
 *     path       := ident ('.' ident)*
 *     literal    := string | number | 'true' | 'false' | 'null' | exp
 *     exp        := 'exp' '(' ( "'" expression "'" | '"' expression '"' ) ')'
 *
 * `expression` (at most 200 characters) is the grammar of `exp-parser.ts`.
 */
import { FILTER_OPERATORS, type Comparison, type FilterNode, type FilterOperator, type Literal } from './filter-ast.js';
import { filterError, quoteSource, tokenizeFilter, type Token } from './filter-lexer.js';
import { parseExpression } from './exp-parser.js';
import { MAX_FILTER_PREDICATES } from '../contract/limits.js';

/** Longest filter text accepted, in characters. */
export const MAX_FILTER_LENGTH = 4000;
/** Deepest parenthesis nesting accepted. */
export const MAX_FILTER_DEPTH = 50;

const OPERATOR_LIST = `an operator (${FILTER_OPERATORS.join(', ')})`;

class Parser {
  private index = 0;
  private predicates = 0;

  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.index];
  }

  private next(): Token {
    const token = this.tokens[this.index];
    if (token.kind !== 'eof') this.index += 1;
    return token;
  }

  /** True when the current token is the word `keyword` (case-insensitive). */
  private atKeyword(keyword: string): boolean {
    const token = this.peek();
    return token.kind === 'word' && token.text.toLowerCase() === keyword;
  }

  /** The error for "expected `what`" at the given token. */
  private expected(what: string, token: Token = this.peek()): Error {
    if (token.kind === 'eof') {
      return filterError(`unexpected end of input, expected ${what} at position ${token.position + 1}`);
    }
    return filterError(`expected ${what} at position ${token.position + 1}, found ${quoteSource(token.text)}`);
  }

  parseAll(): FilterNode {
    const node = this.parseExpr(0);
    if (this.peek().kind !== 'eof') throw this.expected('"and", "or" or the end of the filter');
    return node;
  }

  private parseExpr(depth: number): FilterNode {
    const operands = [this.parseAnd(depth)];
    while (this.atKeyword('or')) {
      this.next();
      operands.push(this.parseAnd(depth));
    }
    return operands.length === 1 ? operands[0] : { kind: 'or', operands };
  }

  private parseAnd(depth: number): FilterNode {
    const operands = [this.parsePrimary(depth)];
    while (this.atKeyword('and')) {
      this.next();
      operands.push(this.parsePrimary(depth));
    }
    return operands.length === 1 ? operands[0] : { kind: 'and', operands };
  }

  private parsePrimary(depth: number): FilterNode {
    const token = this.peek();
    if (token.kind !== 'lparen') return this.parseComparison();
    if (depth >= MAX_FILTER_DEPTH) {
      throw filterError(`parentheses nested deeper than ${MAX_FILTER_DEPTH} levels at position ${token.position + 1}`);
    }
    this.next();
    const inner = this.parseExpr(depth + 1);
    if (this.peek().kind !== 'rparen') {
      throw this.expected(`"and", "or" or ")" (to close the "(" from position ${token.position + 1})`);
    }
    this.next();
    return inner;
  }

  private parseComparison(): Comparison {
    const first = this.peek();
    if (first.kind !== 'word') throw this.expected('a property name or "("');
    this.predicates += 1;
    if (this.predicates > MAX_FILTER_PREDICATES) {
      throw filterError(`more than ${MAX_FILTER_PREDICATES} comparisons (the limit per filter) at position ${first.position + 1}`);
    }
    const path = [this.next().text];
    while (this.peek().kind === 'dot') {
      this.next();
      if (this.peek().kind !== 'word') throw this.expected('a property name after "."');
      path.push(this.next().text);
    }
    const opToken = this.peek();
    const op = opToken.kind === 'word' ? opToken.text.toLowerCase() : '';
    if (!(FILTER_OPERATORS as readonly string[]).includes(op)) throw this.expected(OPERATOR_LIST);
    this.next();
    let caseInsensitive = false;
    const tilde = this.peek();
    if (tilde.kind === 'tilde' && tilde.position === opToken.position + opToken.text.length) {
      this.next();
      caseInsensitive = true;
    }
    const value = this.parseLiteral();
    return { kind: 'comparison', path, op: op as FilterOperator, caseInsensitive, value, position: first.position };
  }

  private parseLiteral(): Literal {
    const token = this.peek();
    if (token.kind === 'string') {
      this.next();
      return { kind: 'string', value: token.value };
    }
    if (token.kind === 'number') {
      const value = Number(token.text);
      if (!Number.isFinite(value)) throw filterError(`number out of range at position ${token.position + 1}`);
      this.next();
      return { kind: 'number', value, raw: token.text };
    }
    if (token.kind === 'word') {
      const word = token.text.toLowerCase();
      if (word === 'true' || word === 'false') {
        this.next();
        return { kind: 'boolean', value: word === 'true' };
      }
      if (word === 'null') {
        this.next();
        return { kind: 'null' };
      }
      if (word === 'exp' && this.tokens[this.index + 1]?.kind === 'lparen') return this.parseExp();
    }
    throw this.expected(`a value (a "string", a number, true, false, null or exp('...'))`);
  }

  /** `exp` `(` quoted-expression `)`; the lexer made the quoted part one `exp` token. */
  private parseExp(): Literal {
    const keyword = this.next();
    this.next();
    const quoted = this.next();
    if (quoted.kind !== 'exp') throw this.expected(`a quoted expression after "exp("`, quoted);
    if (this.peek().kind !== 'rparen') throw this.expected(`")" to close "exp(" from position ${keyword.position + 1}`);
    this.next();
    const ast = parseExpression(quoted.value, quoted.position + 1);
    return { kind: 'exp', ast, source: quoted.value, position: keyword.position };
  }
}

/**
 * Parses a filter expression of SPEC §4.3 (literals per DESIGN §4 "Data details").
 *
 * @param text e.g. `status eq "open" and (total gt 10 or customer.name sw "A")`.
 * @returns the tree, e.g. `{ kind: 'and', operands: [{ kind: 'comparison', path: ['status'],
 *   op: 'eq', caseInsensitive: false, value: { kind: 'string', value: 'open' }, position: 0 }, ...] }`.
 *   `exp('...')` values become `{ kind: 'exp', ast, source, position }` (evaluated by `compileFilter`).
 * @throws HttpError 400 `INVALID_FILTER` when the text is empty, longer than 4000 characters,
 *   holds more than 100 comparisons, a NUL character (U+0000), nested deeper than 50 parentheses or
 *   is malformed, or an `exp()` is longer than 200 characters or malformed (see `parseExpression`);
 *   the message names the limit or the 1-based position and what was expected.
 */
export function parseFilter(text: string): FilterNode {
  const cached = parsedFilters.get(text);
  if (cached) return cached;
  if (text.length > MAX_FILTER_LENGTH) {
    throw filterError(`too long (${text.length} characters, at most ${MAX_FILTER_LENGTH})`);
  }
  const tokens = tokenizeFilter(text);
  if (tokens.length === 1) throw filterError('empty expression');
  const node = new Parser(tokens).parseAll();
  // Trees are never changed after parsing (compiling reads them), so one can serve every request.
  if (parsedFilters.size >= PARSED_FILTERS_KEPT) parsedFilters.delete(parsedFilters.keys().next().value!);
  parsedFilters.set(text, node);
  return node;
}

/** Filters parsed lately, by text: a client repeats the same few filters (oldest dropped first). */
const parsedFilters = new Map<string, FilterNode>();
const PARSED_FILTERS_KEPT = 500;
