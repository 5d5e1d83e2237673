import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { HttpError } from '../../../dist/runtime/errors.js';
import type { Comparison, ExpNode, FilterNode, Literal } from '../../../dist/runtime/query/filter-ast.js';
import { tokenizeFilter } from '../../../dist/runtime/query/filter-lexer.js';
import { parseFilter } from '../../../dist/runtime/query/filter-parser.js';

/** A comparison node; `position` defaults to 0. */
function cmp(path: string, op: Comparison['op'], value: Literal, position = 0, caseInsensitive = false): Comparison {
  return { kind: 'comparison', path: path.split('.'), op, caseInsensitive, value, position };
}
const str = (value: string): Literal => ({ kind: 'string', value });
const num = (raw: string): Literal => ({ kind: 'number', value: Number(raw), raw });
const exp = (source: string, ast: ExpNode, position = 5): Literal => ({ kind: 'exp', ast, source, position });
const n = (raw: string, position: number): ExpNode => ({ kind: 'number', value: Number(raw), raw, position });
const bin = (op: '+' | '-' | '*' | '/', left: ExpNode, right: ExpNode, position: number): ExpNode => ({ kind: 'binary', op, left, right, position });
const and = (...operands: FilterNode[]): FilterNode => ({ kind: 'and', operands });
const or = (...operands: FilterNode[]): FilterNode => ({ kind: 'or', operands });

const valid: [string, { given: string; want: FilterNode }][] = [
  ['a string comparison', { given: 'title eq "x"', want: cmp('title', 'eq', str('x')) }],
  [
    'every operator',
    {
      given: 'a ne 1 and a gt 1 and a ge 1 and a lt 1 and a le 1 and a con "" and a ncon "" and a sw "" and a ew ""',
      want: and(
        cmp('a', 'ne', num('1')),
        cmp('a', 'gt', num('1'), 11),
        cmp('a', 'ge', num('1'), 22),
        cmp('a', 'lt', num('1'), 33),
        cmp('a', 'le', num('1'), 44),
        cmp('a', 'con', str(''), 55),
        cmp('a', 'ncon', str(''), 68),
        cmp('a', 'sw', str(''), 82),
        cmp('a', 'ew', str(''), 94),
      ),
    },
  ],
  [
    'and binds tighter than or',
    {
      given: 'a eq 1 or b eq 2 and c eq 3',
      want: or(cmp('a', 'eq', num('1')), and(cmp('b', 'eq', num('2'), 10), cmp('c', 'eq', num('3'), 21))),
    },
  ],
  [
    'and binds tighter than or (left)',
    {
      given: 'a eq 1 and b eq 2 or c eq 3',
      want: or(and(cmp('a', 'eq', num('1')), cmp('b', 'eq', num('2'), 11)), cmp('c', 'eq', num('3'), 21)),
    },
  ],
  [
    'chains are n-ary',
    {
      given: 'a eq 1 or b eq 2 or c eq 3',
      want: or(cmp('a', 'eq', num('1')), cmp('b', 'eq', num('2'), 10), cmp('c', 'eq', num('3'), 20)),
    },
  ],
  [
    'parentheses group',
    {
      given: '(a eq 1 or b eq 2) and c eq 3',
      want: and(or(cmp('a', 'eq', num('1'), 1), cmp('b', 'eq', num('2'), 11)), cmp('c', 'eq', num('3'), 23)),
    },
  ],
  ['redundant parentheses', { given: '((( a eq 1 )))', want: cmp('a', 'eq', num('1'), 4) }],
  [
    'case-insensitive keywords and operators',
    {
      given: 'a EQ TRUE AND b Ne False Or c eQ NULL',
      want: or(
        and(cmp('a', 'eq', { kind: 'boolean', value: true }), cmp('b', 'ne', { kind: 'boolean', value: false }, 14)),
        cmp('c', 'eq', { kind: 'null' }, 28),
      ),
    },
  ],
  ['dot paths', { given: 'customer.region.name sw "A"', want: cmp('customer.region.name', 'sw', str('A')) }],
  ['spaces around dots', { given: 'customer . name eq "A"', want: cmp('customer.name', 'eq', str('A')) }],
  ['escaped quote and backslash', { given: String.raw`t eq "say \"hi\" \\o/"`, want: cmp('t', 'eq', str('say "hi" \\o/')) }],
  ['percent, underscore and unicode kept', { given: 't con "50%_ü 😀"', want: cmp('t', 'con', str('50%_ü 😀')) }],
  ['integer', { given: 'n eq 12', want: cmp('n', 'eq', num('12')) }],
  ['negative decimal', { given: 'n eq -3.5', want: cmp('n', 'eq', num('-3.5')) }],
  ['fraction below one', { given: 'n lt 0.25', want: cmp('n', 'lt', num('0.25')) }],
  ['keywords as property names', { given: 'or eq 1 and and eq 2', want: and(cmp('or', 'eq', num('1')), cmp('and', 'eq', num('2'), 12)) }],
  ['tilde marks case-insensitive', { given: 'name eq~ "a"', want: cmp('name', 'eq', str('a'), 0, true) }],
  ['tabs and newlines', { given: '\ta\neq\r\n1 ', want: cmp('a', 'eq', num('1'), 1) }],
  [
    'exp now() minus days',
    {
      given: "a eq exp('now() - 7D')",
      want: cmp(
        'a',
        'eq',
        exp(
          'now() - 7D',
          bin('-', { kind: 'call', name: 'now', args: [], position: 10 }, { kind: 'duration', amount: 7, unit: 'D', raw: '7D', position: 18 }, 16),
        ),
      ),
    },
  ],
  [
    'exp precedence and unary minus',
    {
      given: 'n lt exp("1 + 2 * -3")',
      want: cmp('n', 'lt', exp('1 + 2 * -3', bin('+', n('1', 10), bin('*', n('2', 14), { kind: 'negate', operand: n('3', 19), position: 18 }, 16), 12))),
    },
  ],
  [
    'exp left associativity and parentheses',
    {
      given: "n eq exp('1-2-(3/4)')",
      want: cmp('n', 'eq', exp('1-2-(3/4)', bin('-', bin('-', n('1', 10), n('2', 12), 11), bin('/', n('3', 15), n('4', 17), 16), 13))),
    },
  ],
  [
    'exp keyword, names and units are case-insensitive',
    {
      given: "t GE EXP ( 'NOW()+1.5h' )",
      want: cmp(
        't',
        'ge',
        exp(
          'NOW()+1.5h',
          bin('+', { kind: 'call', name: 'now', args: [], position: 12 }, { kind: 'duration', amount: 1.5, unit: 'H', raw: '1.5h', position: 18 }, 17),
          5,
        ),
      ),
    },
  ],
  [
    'exp functions',
    {
      given: "n eq exp('pow(ABS(-2), 3)')",
      want: cmp(
        'n',
        'eq',
        exp('pow(ABS(-2), 3)', {
          kind: 'call',
          name: 'Pow',
          position: 10,
          args: [{ kind: 'call', name: 'Abs', position: 14, args: [{ kind: 'negate', operand: n('2', 19), position: 18 }] }, n('3', 23)],
        }),
      ),
    },
  ],
  [
    'exp strings and me()',
    {
      given: `o eq exp("me()") or s eq exp('"x y"')`,
      want: or(
        cmp('o', 'eq', exp('me()', { kind: 'call', name: 'me', args: [], position: 10 })),
        cmp('s', 'eq', exp('"x y"', { kind: 'string', value: 'x y', position: 30 }, 25), 20),
      ),
    },
  ],
  ['a property named exp', { given: 'exp eq 1', want: cmp('exp', 'eq', num('1')) }],
];

describe('parseFilter', () => {
  it.each(valid)('%s', (_title, { given, want }) => {
    expect(parseFilter(given)).toEqual(want);
  });

  const invalid: [string, { given: string; want: RegExp }][] = [
    ['empty', { given: '', want: /empty/ }],
    ['whitespace only', { given: '  \t ', want: /empty/ }],
    [
      'unknown operator',
      {
        given: 'status xx "a"',
        want: /expected an operator \(eq, ne, gt, ge, lt, le, con, ncon, sw, ew\) at position 8, found "xx"/,
      },
    ],
    ['missing value', { given: 'customer.name eq', want: /unexpected end of input, expected a value .* at position 17/ }],
    ['missing operator', { given: 'title', want: /unexpected end of input, expected an operator .* at position 6/ }],
    ['unterminated string', { given: 'title eq "abc', want: /unterminated string starting at position 10/ }],
    ['string ending in a backslash', { given: 'title eq "abc\\', want: /unterminated string starting at position 10/ }],
    ['bad escape', { given: 'title eq "a\\n"', want: /invalid escape .* at position 12/ }],
    ['bare word value', { given: 'title eq open', want: /expected a value .* at position 10, found "open"/ }],
    ['single quotes', { given: "title eq 'x'", want: /unexpected character "'" at position 10/ }],
    ['unexpected character', { given: 'a eq 1 # b', want: /unexpected character "#" at position 8/ }],
    ['dangling and', { given: 'a eq 1 and', want: /unexpected end of input, expected a property name .* at position 11/ }],
    ['two comparisons without and', { given: 'a eq 1 b eq 2', want: /expected "and", "or" or the end of the filter at position 8, found "b"/ }],
    [
      'unclosed parenthesis',
      { given: '(a eq 1', want: /unexpected end of input, expected "and", "or" or "\)" \(to close the "\(" from position 1\) at position 8/ },
    ],
    ['extra closing parenthesis', { given: 'a eq 1)', want: /at position 7, found "\)"/ }],
    ['empty parentheses', { given: '()', want: /expected a property name or "\(" at position 2, found "\)"/ }],
    ['number after a dot', { given: 'a.1 eq 2', want: /expected a property name after "\." at position 3, found "1"/ }],
    ['trailing dot', { given: 'a.', want: /unexpected end of input, expected a property name after "\." at position 3/ }],
    ['number with trailing dot', { given: 'a eq 1.', want: /at position 7, found "\."/ }],
    ['lone minus', { given: 'a eq -', want: /unexpected character "-" at position 6/ }],
    ['number too large', { given: `a eq ${'9'.repeat(400)}`, want: /number out of range at position 6/ }],
    ['exp too long', { given: `a eq exp('${'1'.repeat(201)}')`, want: /exp\(\) expression too long at position 11 \(201 characters, at most 200\)/ }],
    [
      'exp unknown function',
      { given: "a eq exp('Foo(1)')", want: /unknown function "Foo" at position 11 \(known: Abs, Ceiling, Floor, Round, Max, Min, Pow, Sqrt, now, me\)/ },
    ],
    ['exp bad duration unit', { given: "a eq exp('now() - 7W')", want: /bad duration unit "W" at position 20 \(expected D, H, M or S/ }],
    ['exp duration unit spelled out', { given: "a eq exp('now() - 7days')", want: /bad duration unit "days" at position 20/ }],
    [
      'exp incomplete',
      {
        given: "a eq exp('1 +')",
        want: /unexpected end of the exp\(\) expression, expected a number, a duration \(7D\), a function call or "\(" at position 14/,
      },
    ],
    [
      'exp unencoded plus',
      { given: "a eq exp('now()  7D')", want: /expected an operator .* at position 18, found "7D" \(a "\+" in a URL must be sent as %2B\)/ },
    ],
    ['exp without quotes', { given: 'a eq exp(now())', want: /expected a quoted expression after "exp\(" at position 10/ }],
    ['exp empty parentheses', { given: 'a eq exp()', want: /expected a quoted expression after "exp\(" at position 10/ }],
    ['exp without parentheses', { given: "a eq exp 'x'", want: /unexpected character "'" at position 10/ }],
    ['exp unterminated', { given: "a eq exp('1+1)", want: /unterminated exp\(\) expression starting at position 10/ }],
    ['exp unclosed', { given: "a eq exp('1' and b eq 2", want: /expected "\)" to close "exp\(" from position 6 at position 14, found "and"/ }],
    ['exp empty', { given: "a eq exp(' ')", want: /empty exp\(\) expression at position 11/ }],
    ['exp wrong arity', { given: "a eq exp('Max(1)')", want: /function Max at position 11 takes 2 arguments, found 1/ }],
    ['exp now() with an argument', { given: "a eq exp('now(1)')", want: /function now at position 11 takes 0 arguments, found 1/ }],
    ['exp bare name', { given: "a eq exp('pi')", want: /unknown name "pi" at position 11 must be followed by "\("/ }],
    ['exp bad character', { given: "a eq exp('1 $ 2')", want: /unexpected character "\$" in exp\(\) at position 13/ }],
    ['exp unclosed parenthesis', { given: "a eq exp('(1 + 2')", want: /expected an operator or "\)" \(to close the "\(" from position 11\) at position 17/ }],
    ['exp unterminated string', { given: `a eq exp('"abc')`, want: /unterminated string in exp\(\) starting at position 11/ }],
    ['exp trailing comma', { given: "a eq exp('Abs(1,)')", want: /expected a number.* at position 17, found "\)"/ }],
    ['too long', { given: `a eq "${'x'.repeat(4000)}"`, want: /too long \(4007 characters, at most 4000\)/ }],
    ['nested too deep', { given: `${'('.repeat(51)}a eq 1${')'.repeat(51)}`, want: /nested deeper than 50 levels at position 51/ }],
  ];

  it.each(invalid)('rejects %s with 400 INVALID_FILTER', (_title, { given, want }) => {
    let error: unknown;
    try {
      parseFilter(given);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    expect((error as HttpError).code).toBe('INVALID_FILTER');
    expect((error as HttpError).message).toMatch(/^filter: /);
    expect((error as HttpError).message).toMatch(want);
  });

  it('accepts an exp() of exactly 200 characters', () => {
    const source = `${'1+'.repeat(99)}10`;
    expect(source).toHaveLength(200);
    expect(parseFilter(`a eq exp('${source}')`)).toMatchObject({ value: { kind: 'exp', source } });
  });

  it('accepts nesting of exactly 50 levels and 4000 characters', () => {
    expect(parseFilter(`${'('.repeat(50)}a eq 1${')'.repeat(50)}`)).toEqual(cmp('a', 'eq', num('1'), 50));
    expect(parseFilter(`a eq "${'x'.repeat(3993)}"`)).toEqual(cmp('a', 'eq', str('x'.repeat(3993))));
  });

  it('tokenizes with 0-based positions', () => {
    expect(tokenizeFilter('a.b eq~ "x"').map((t) => [t.kind, t.value, t.position])).toEqual([
      ['word', 'a', 0],
      ['dot', '.', 1],
      ['word', 'b', 2],
      ['word', 'eq', 4],
      ['tilde', '~', 6],
      ['string', 'x', 8],
      ['eof', '', 11],
    ]);
  });

  it('fuzz: any input parses or fails with a 400 HttpError', () => {
    const alphabet = fc.constantFrom(
      ...'abc_. ()"\\~-0123456789\'+*/,'.split(''),
      'eq',
      'ne',
      ' and ',
      ' or ',
      'true',
      'null',
      'con',
      '"x"',
      '1.5',
      'exp(',
      "exp('",
      "')",
      'now()',
      'me()',
      '7D',
      '2h',
      'Max(',
      'Sqrt(',
      'x(',
    );
    const filterish = fc.array(alphabet, { maxLength: 40 }).map((parts) => parts.join(''));
    const anything = fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ maxLength: 80 }), filterish);
    fc.assert(
      fc.property(anything, (text) => {
        try {
          const node = parseFilter(text);
          expect(['comparison', 'and', 'or']).toContain(node.kind);
        } catch (e) {
          if (!(e instanceof HttpError) || e.status !== 400 || e.code !== 'INVALID_FILTER') throw e;
        }
      }),
      { numRuns: 3000 },
    );
  });
});
