/**
 * @module Full-text search (SPEC §4.2 `search`): every word of the request must be a prefix of a word
 * in one of the row's string or text properties, case-insensitively. A word is a run of letters and
 * digits; everything else separates words. The condition uses the index the migration created
 * (the generator's `migrate/search-index.ts` names the objects):
 * - SQLite: `id IN (SELECT id FROM "<Name>__search" WHERE "<Name>__search" MATCH '"w1"* "w2"*')`
 * - PostgreSQL: `"__search" @@ to_tsquery('simple', 'w1:* & w2:*')` over the GIN-indexed column.
 * The words travel as one bound value; they hold only letters and digits, so they cannot carry
 * FTS5 or tsquery syntax.
 */
import type { Collection, DatabaseProvider } from '../manifest.js';
import { HttpError } from '../errors.js';
import { ident, sql, type Sql } from '../query/sql.js';

/** At most this many words per search. */
export const MAX_SEARCH_WORDS = 16;

/**
 * Splits a search text into lower-case words (runs of Unicode letters and digits).
 * @returns the words; empty when the text has none (then the search matches every row)
 * @throws HttpError INVALID_PARAMETER (400) with more than `MAX_SEARCH_WORDS` words
 */
export function searchWords(text: string): string[] {
  const words = text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  if (words.length > MAX_SEARCH_WORDS) {
    const message = `at most ${MAX_SEARCH_WORDS} words are allowed, got ${words.length}`;
    throw new HttpError('INVALID_PARAMETER', `search: ${message}`, { details: [{ path: '/search', message }] });
  }
  return words;
}

/**
 * The WHERE condition on alias `alias` that keeps rows matching every word.
 * Source: SPEC §4.2 (`search`), DESIGN §4 ("search is case-insensitive; several words are ANDed").
 */
export function searchCondition(provider: DatabaseProvider, collection: Collection, alias: string, words: string[]): Sql {
  if (provider === 'postgresql') {
    return sql`${ident(alias, '__search')} @@ to_tsquery('simple', ${words.map((w) => `${w}:*`).join(' & ')})`;
  }
  const fts = ident(`${collection.name}__search`);
  return sql`${ident(alias, 'id')} IN (SELECT "id" FROM ${fts} WHERE ${fts} MATCH ${words.map((w) => `"${w}"*`).join(' ')})`;
}
