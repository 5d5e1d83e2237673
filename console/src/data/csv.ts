/**
 * @module One CSV cell of the console's export (RFC 4180), safe to open in a spreadsheet (issue 30
 * item 10, OWASP "CSV Injection"): a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return would be read as a formula, so it gets a leading `'` (shown as text, never run), and is then
 * quoted. A plain number (`-5`, `+1.5e3`) is no formula and stays as it is, so numeric columns keep
 * their values.
 */

/** Characters that make a spreadsheet read a cell as a formula when they come first. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A number as a spreadsheet reads one: kept, though it may start with `-` or `+`. */
const PLAIN_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Encodes one cell: formula-like text prefixed with `'`; quoted (inner `"` doubled) when it holds `"`,
 * `,`, a line break, or was prefixed.
 * @example csvCell('=HYPERLINK("http://x")') → `"'=HYPERLINK(""http://x"")"`; csvCell('-5') → `-5`
 */
export function csvCell(text: string): string {
  const formula = FORMULA_START.test(text) && !PLAIN_NUMBER.test(text);
  const safe = formula ? `'${text}` : text;
  return formula || /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
