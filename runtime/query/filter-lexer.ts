/**
 * @module The tokenizer of the filter language (SPEC §4.3): turns filter text into words,
 * string and number literals and punctuation, each with its 0-based character offset.
 * Keywords and operators are plain `word` tokens; the parser gives them meaning by position.
 * Right after `exp(` the lexer reads one quoted expression (`'...'` or `"..."`, no escapes) as a
 * single `exp` token; `exp-parser.ts` parses its inside.
 */
import { HttpError } from '../errors.js';

export type TokenKind = 'word' | 'string' | 'number' | 'exp' | 'lparen' | 'rparen' | 'dot' | 'tilde' | 'eof';

export interface Token {
  kind: TokenKind;
  /** The token's source text (for `eof`, the empty string). */
  text: string;
  /**
   * `string` tokens: the decoded value (`\"` → `"`, `\\` → `\`). `exp` tokens: the text between
   * the quotes. Otherwise equal to `text`.
   */
  value: string;
  /** 0-based character offset of the token's first character (for `eof`, the text length). */
  position: number;
}

const WORD = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /-?[0-9]+(?:\.[0-9]+)?/y;
const WHITESPACE = /[ \t\r\n]+/y;
const PUNCTUATION: Record<string, TokenKind> = { '(': 'lparen', ')': 'rparen', '.': 'dot', '~': 'tilde' };

/** A 400 `INVALID_FILTER` error with the given message (prefixed with `filter: `). */
export function filterError(message: string): HttpError {
  return new HttpError('INVALID_FILTER', `filter: ${message}`);
}

/** A short, quoted rendering of source text for error messages. */
export function quoteSource(text: string): string {
  return JSON.stringify(text.length > 30 ? `${text.slice(0, 30)}...` : text);
}

/** Matches a sticky regex at `at`; returns the matched text or undefined. */
function matchAt(re: RegExp, text: string, at: number): string | undefined {
  re.lastIndex = at;
  const m = re.exec(text);
  return m ? m[0] : undefined;
}

/** Reads a double-quoted string starting at `start` (which holds the opening quote). */
function readString(text: string, start: number): Token {
  let value = '';
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      return { kind: 'string', text: text.slice(start, i + 1), value, position: start };
    }
    if (ch === '\\') {
      const next = text[i + 1];
      if (next === '"' || next === '\\') {
        value += next;
        i += 2;
        continue;
      }
      if (next === undefined) break;
      throw filterError(`invalid escape ${quoteSource(`\\${next}`)} at position ${i + 1} (only \\" and \\\\ are allowed)`);
    }
    value += ch;
    i += 1;
  }
  throw filterError(`unterminated string starting at position ${start + 1}`);
}

/** True when the last tokens are `exp` `(`, so a quoted expression must follow. */
function afterExpParen(tokens: Token[]): boolean {
  const n = tokens.length;
  return n >= 2 && tokens[n - 1].kind === 'lparen' && tokens[n - 2].kind === 'word' && tokens[n - 2].text.toLowerCase() === 'exp';
}

/** Reads the quoted expression of `exp(` starting at `start` (which holds `'` or `"`). */
function readExpression(text: string, start: number): Token {
  const quote = text[start];
  if (quote !== "'" && quote !== '"') {
    throw filterError(`expected a quoted expression after "exp(" at position ${start + 1}, e.g. exp('now() - 7D')`);
  }
  const end = text.indexOf(quote, start + 1);
  if (end < 0) throw filterError(`unterminated exp() expression starting at position ${start + 1}`);
  return { kind: 'exp', text: text.slice(start, end + 1), value: text.slice(start + 1, end), position: start };
}

/**
 * Splits filter text into tokens; the last token is always `eof`.
 *
 * @param text the raw filter expression, e.g. `customer.name sw "A" and age ge 18`.
 * @returns tokens such as `{ kind: 'word', text: 'age', value: 'age', position: 21 }`; after
 *   `exp(` one `{ kind: 'exp', text: "'now() - 7D'", value: 'now() - 7D', position }`.
 * @throws HttpError 400 `INVALID_FILTER` on a NUL character (U+0000) anywhere, an unexpected
 *   character, an unterminated string or expression, an invalid escape, or `exp(` without a quote;
 *   the message names the 1-based position. (SPEC §4.3, DESIGN §4.)
 */
export function tokenizeFilter(text: string): Token[] {
  // PostgreSQL cannot store or compare U+0000 in text: refuse it anywhere, strings and exp() included.
  const nul = text.indexOf('\u0000');
  if (nul >= 0) throw filterError(`NUL character (U+0000) at position ${nul + 1} is not allowed in a filter`);
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const space = matchAt(WHITESPACE, text, i);
    if (space !== undefined) {
      i += space.length;
      continue;
    }
    const ch = text[i];
    if (afterExpParen(tokens)) {
      const token = readExpression(text, i);
      tokens.push(token);
      i += token.text.length;
      continue;
    }
    if (ch === '"') {
      const token = readString(text, i);
      tokens.push(token);
      i += token.text.length;
      continue;
    }
    const punctuation = PUNCTUATION[ch];
    if (punctuation !== undefined) {
      tokens.push({ kind: punctuation, text: ch, value: ch, position: i });
      i += 1;
      continue;
    }
    const word = matchAt(WORD, text, i);
    if (word !== undefined) {
      tokens.push({ kind: 'word', text: word, value: word, position: i });
      i += word.length;
      continue;
    }
    const number = matchAt(NUMBER, text, i);
    if (number !== undefined) {
      tokens.push({ kind: 'number', text: number, value: number, position: i });
      i += number.length;
      continue;
    }
    const codePoint = String.fromCodePoint(text.codePointAt(i) ?? 0);
    throw filterError(`unexpected character ${quoteSource(codePoint)} at position ${i + 1}`);
  }
  tokens.push({ kind: 'eof', text: '', value: '', position: text.length });
  return tokens;
}
