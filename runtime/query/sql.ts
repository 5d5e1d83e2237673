/**
 * @module A minimal parameterised SQL builder. Values are never spliced into SQL text: a fragment
 * keeps its text with `?` markers and its values apart, and `renderSql` numbers the markers for the
 * provider (`?` for SQLite, `$1..$n` for PostgreSQL) only when the statement is sent.
 */
import type { DatabaseProvider } from '../manifest.js';

/** A piece of SQL: `text` holds one `?` per entry of `values`, in order. */
export interface Sql {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** Identifiers must match this before they are quoted (names come from the manifest, never a request). */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A fragment with no values. `text` must not contain `?`. */
export function raw(text: string): Sql {
  return { text, values: [] };
}

/** One bound value. */
export function param(value: unknown): Sql {
  return { text: '?', values: [value] };
}

/** Names already checked against `IDENTIFIER` (the manifest's names: a bounded set). */
const checked = new Set<string>();

/** A quoted identifier (`"name"`), or `"alias"."name"` when two parts are given. */
export function ident(...parts: string[]): Sql {
  let text = '';
  for (const p of parts) {
    if (!checked.has(p)) {
      if (!IDENTIFIER.test(p)) throw new TypeError(`invalid SQL identifier ${JSON.stringify(p)}`);
      if (checked.size < 10_000) checked.add(p);
    }
    text = text === '' ? `"${p}"` : `${text}."${p}"`;
  }
  return raw(text);
}

/** Tagged template: interpolated `Sql` fragments are inlined, anything else is bound as a value. */
export function sql(strings: TemplateStringsArray, ...args: unknown[]): Sql {
  let text = strings[0];
  const values: unknown[] = [];
  args.forEach((arg, i) => {
    if (isSql(arg)) {
      text += arg.text;
      values.push(...arg.values);
    } else {
      text += '?';
      values.push(arg);
    }
    text += strings[i + 1];
  });
  return { text, values };
}

/** Joins fragments with a separator (`, `, ` AND `...). */
export function join(parts: readonly Sql[], separator: string): Sql {
  return {
    text: parts.map((p) => p.text).join(separator),
    values: parts.flatMap((p) => p.values),
  };
}

export function isSql(value: unknown): value is Sql {
  return typeof value === 'object' && value !== null && 'text' in value && 'values' in value && Array.isArray((value as Sql).values);
}

/** PostgreSQL texts by their `?` form: statement shapes repeat (values are bound), so each is numbered once. */
const numbered = new Map<string, string>();
/** Most texts kept in `numbered` (shapes a client can vary, such as `IN` lists, never grow it further). */
const MAX_NUMBERED = 2000;

/** Final statement text for the provider, with its values in order. */
export function renderSql(fragment: Sql, provider: DatabaseProvider): { text: string; values: unknown[] } {
  if (provider === 'sqlite') return { text: fragment.text, values: [...fragment.values] };
  let text = numbered.get(fragment.text);
  if (text === undefined) {
    let n = 0;
    // Fragments never contain literal `?` (strings are bound), so every `?` is a marker.
    text = fragment.text.replace(/\?/g, () => `$${++n}`);
    if (numbered.size < MAX_NUMBERED) numbered.set(fragment.text, text);
  }
  return { text, values: [...fragment.values] };
}

/** ` AND (c1) AND (c2)…` to append to a WHERE clause, or nothing when there are no conditions. */
export function andAll(conditions: readonly Sql[]): Sql {
  return conditions.length === 0
    ? raw('')
    : sql` AND ${join(
        conditions.map((c) => sql`(${c})`),
        ' AND ',
      )}`;
}
