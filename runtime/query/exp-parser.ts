/**
 * @module The parser of `exp('<expression>')` values (SPEC §4.3 rules 4–6): the text between the
 * quotes → `ExpNode`. Positions in nodes and error messages are offsets in the whole filter text.
 * Grammar (names and duration units case-insensitive, usual precedence, left-associative):
 *
 *     sum      := product (('+' | '-') product)*
 *     product  := unary (('*' | '/') unary)*
 *     unary    := ('-' | '+') unary | primary
 *     primary  := number | duration | string | call | '(' sum ')'
 *     call     := name '(' [sum (',' sum)*] ')'
 *     number   := digit+ ['.' digit+]
 *     duration := number ('D' | 'H' | 'M' | 'S')      (no space between number and unit)
 *     string   := '"' any* '"' | "'" any* "'"         (the quote kind not used around the expression)
 */
import { EXP_FUNCTIONS, type DurationUnit, type ExpFunction, type ExpNode } from './filter-ast.js';
import { filterError, quoteSource } from './filter-lexer.js';

/** Longest expression accepted between the quotes of `exp(...)`, in UTF-16 code units like the 4000 limit (DESIGN §4). */
export const MAX_EXP_LENGTH = 200;

/** Number of arguments each function takes. */
export const EXP_ARITY: Record<ExpFunction, number> = {
  Abs: 1,
  Ceiling: 1,
  Floor: 1,
  Round: 1,
  Sqrt: 1,
  Max: 2,
  Min: 2,
  Pow: 2,
  now: 0,
  me: 0,
};

type ExpTokenKind = 'number' | 'duration' | 'string' | 'name' | 'op' | 'lparen' | 'rparen' | 'comma' | 'eof';

interface ExpToken {
  kind: ExpTokenKind;
  text: string;
  /** 0-based offset in the filter text. */
  position: number;
}

const NUMBER = /[0-9]+(?:\.[0-9]+)?/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const UNITS = new Set(['D', 'H', 'M', 'S']);
const PUNCTUATION: Record<string, ExpTokenKind> = {
  '+': 'op',
  '-': 'op',
  '*': 'op',
  '/': 'op',
  '(': 'lparen',
  ')': 'rparen',
  ',': 'comma',
};

function matchAt(re: RegExp, text: string, at: number): string | undefined {
  re.lastIndex = at;
  return re.exec(text)?.[0];
}

function tokenize(source: string, offset: number): ExpToken[] {
  const tokens: ExpToken[] = [];
  const at = (i: number) => offset + i;
  let i = 0;
  while (i < source.length) {
    const ch = source[i];
    if (ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n') {
      i += 1;
      continue;
    }
    if (ch === '"' || ch === "'") {
      const end = source.indexOf(ch, i + 1);
      if (end < 0) throw filterError(`unterminated string in exp() starting at position ${at(i) + 1}`);
      tokens.push({ kind: 'string', text: source.slice(i, end + 1), position: at(i) });
      i = end + 1;
      continue;
    }
    const kind = PUNCTUATION[ch];
    if (kind !== undefined) {
      tokens.push({ kind, text: ch, position: at(i) });
      i += 1;
      continue;
    }
    const number = matchAt(NUMBER, source, i);
    if (number !== undefined) {
      const unit = matchAt(NAME, source, i + number.length);
      if (unit !== undefined && !UNITS.has(unit.toUpperCase())) {
        throw filterError(
          `bad duration unit ${quoteSource(unit)} at position ${at(i + number.length) + 1}` + ' (expected D, H, M or S right after the number, e.g. 7D)',
        );
      }
      const text = number + (unit ?? '');
      tokens.push({ kind: unit === undefined ? 'number' : 'duration', text, position: at(i) });
      i += text.length;
      continue;
    }
    const name = matchAt(NAME, source, i);
    if (name !== undefined) {
      tokens.push({ kind: 'name', text: name, position: at(i) });
      i += name.length;
      continue;
    }
    const codePoint = String.fromCodePoint(source.codePointAt(i) ?? 0);
    throw filterError(`unexpected character ${quoteSource(codePoint)} in exp() at position ${at(i) + 1}`);
  }
  tokens.push({ kind: 'eof', text: '', position: at(source.length) });
  return tokens;
}

const FUNCTION_BY_NAME = new Map<string, ExpFunction>(EXP_FUNCTIONS.map((f) => [f.toLowerCase(), f]));
const OPERAND_START = new Set<ExpTokenKind>(['number', 'duration', 'string', 'name', 'lparen']);

class ExpParser {
  private index = 0;

  constructor(private readonly tokens: ExpToken[]) {}

  private peek(): ExpToken {
    return this.tokens[this.index];
  }

  private next(): ExpToken {
    const token = this.tokens[this.index];
    if (token.kind !== 'eof') this.index += 1;
    return token;
  }

  private expected(what: string, token: ExpToken = this.peek()): Error {
    if (token.kind === 'eof') {
      return filterError(`unexpected end of the exp() expression, expected ${what} at position ${token.position + 1}`);
    }
    return filterError(`expected ${what} in exp() at position ${token.position + 1}, found ${quoteSource(token.text)}`);
  }

  parseAll(): ExpNode {
    const node = this.parseSum();
    const token = this.peek();
    if (token.kind !== 'eof') {
      // An unencoded "+" in a URL query arrives as a space: `now() + 7D` becomes `now()   7D`.
      const hint = OPERAND_START.has(token.kind) ? ' (a "+" in a URL must be sent as %2B)' : '';
      throw filterError(
        `expected an operator (+, -, *, /) or the end of the exp() expression at position ${token.position + 1}, found ${quoteSource(token.text)}${hint}`,
      );
    }
    return node;
  }

  private parseSum(): ExpNode {
    let left = this.parseProduct();
    for (let t = this.peek(); t.kind === 'op' && (t.text === '+' || t.text === '-'); t = this.peek()) {
      this.next();
      left = { kind: 'binary', op: t.text, left, right: this.parseProduct(), position: t.position };
    }
    return left;
  }

  private parseProduct(): ExpNode {
    let left = this.parseUnary();
    for (let t = this.peek(); t.kind === 'op' && (t.text === '*' || t.text === '/'); t = this.peek()) {
      this.next();
      left = { kind: 'binary', op: t.text, left, right: this.parseUnary(), position: t.position };
    }
    return left;
  }

  private parseUnary(): ExpNode {
    const token = this.peek();
    if (token.kind === 'op' && (token.text === '-' || token.text === '+')) {
      this.next();
      const operand = this.parseUnary();
      return token.text === '-' ? { kind: 'negate', operand, position: token.position } : operand;
    }
    return this.parsePrimary();
  }

  private parsePrimary(): ExpNode {
    const token = this.peek();
    const { position, text } = token;
    switch (token.kind) {
      case 'number':
        this.next();
        return { kind: 'number', value: Number(text), raw: text, position };
      case 'duration': {
        this.next();
        const unit = text.slice(-1).toUpperCase() as DurationUnit;
        return { kind: 'duration', amount: Number(text.slice(0, -1)), unit, raw: text, position };
      }
      case 'string':
        this.next();
        return { kind: 'string', value: text.slice(1, -1), position };
      case 'lparen': {
        this.next();
        const inner = this.parseSum();
        if (this.peek().kind !== 'rparen') throw this.expected(`an operator or ")" (to close the "(" from position ${position + 1})`);
        this.next();
        return inner;
      }
      case 'name':
        return this.parseCall();
      default:
        throw this.expected('a number, a duration (7D), a function call or "("');
    }
  }

  private parseCall(): ExpNode {
    const token = this.next();
    const name = FUNCTION_BY_NAME.get(token.text.toLowerCase());
    if (this.peek().kind !== 'lparen') {
      const what = name === undefined ? `unknown name ${quoteSource(token.text)}` : `function ${name}`;
      throw filterError(`${what} at position ${token.position + 1} must be followed by "(" (a call such as now() or Abs(-2))`);
    }
    if (name === undefined) {
      throw filterError(`unknown function ${quoteSource(token.text)} at position ${token.position + 1} (known: ${EXP_FUNCTIONS.join(', ')})`);
    }
    this.next();
    const args: ExpNode[] = [];
    if (this.peek().kind !== 'rparen') {
      args.push(this.parseSum());
      while (this.peek().kind === 'comma') {
        this.next();
        args.push(this.parseSum());
      }
    }
    if (this.peek().kind !== 'rparen') throw this.expected(`"," or ")" (to close ${name}( from position ${token.position + 1})`);
    this.next();
    const arity = EXP_ARITY[name];
    if (args.length !== arity) {
      throw filterError(`function ${name} at position ${token.position + 1} takes ${arity} argument${arity === 1 ? '' : 's'}, found ${args.length}`);
    }
    return { kind: 'call', name, args, position: token.position };
  }
}

/**
 * Parses the text between the quotes of `exp('...')`.
 *
 * @param source e.g. `now() - 7D` or `Round(2.5) * 3`.
 * @param offset 0-based offset of `source`'s first character in the filter text; node positions
 *   and error positions are shifted by it.
 * @returns e.g. `{ kind: 'binary', op: '-', left: { kind: 'call', name: 'now', args: [], ... },
 *   right: { kind: 'duration', amount: 7, unit: 'D', ... }, position: offset + 6 }`.
 * @throws HttpError 400 `INVALID_FILTER` when `source` is empty, longer than 200 characters or
 *   malformed, names an unknown function, has a bad duration unit or a wrong number of arguments;
 *   the message names the 1-based position in the filter. (SPEC §4.3, DESIGN §4.)
 */
export function parseExpression(source: string, offset = 0): ExpNode {
  if (source.length > MAX_EXP_LENGTH) {
    throw filterError(`exp() expression too long at position ${offset + 1} (${source.length} characters, at most ${MAX_EXP_LENGTH})`);
  }
  const tokens = tokenize(source, offset);
  if (tokens.length === 1) throw filterError(`empty exp() expression at position ${offset + 1}`);
  return new ExpParser(tokens).parseAll();
}
