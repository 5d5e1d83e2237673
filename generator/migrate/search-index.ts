/**
 * @module The full-text search objects of collections with `"search": true` (SPEC §4.2), which
 * Prisma's datamodel diff does not know about. The migration planner puts `drop` before Prisma's SQL
 * and `create` after it, for every collection whose searched columns changed or whose table Prisma's
 * SQL touches (SQLite rebuilds tables to alter them, which drops their triggers).
 *
 * Objects (the runtime's `runtime/data/search.ts` queries them by these names):
 * - SQLite: FTS5 table `<Name>__search` (`id` unindexed + one column per searched property,
 *   tokenizer `unicode61 remove_diacritics 0`), a key table `<Name>__search_key` giving every row a
 *   stable integer FTS rowid, and triggers `<Name>__search_insert|update|delete` that keep both in sync.
 * - PostgreSQL: a stored generated column `__search` (tsvector of the lower-cased text split into
 *   letter/digit words) and a GIN index `<Name>__search` over it.
 */
import type { DatabaseProvider } from '../../runtime/index.js';

/** What search covers per collection: table name → searched columns (empty: no search). */
export type SearchSpec = Map<string, string[]>;

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Reads the search spec back from a `schema.prisma` text: the `/// svc:search a, b` doc comment the
 * schema emitter writes above a model.
 */
export function readSearchSpec(schema: string | null): SearchSpec {
  const spec: SearchSpec = new Map();
  if (!schema) return spec;
  const re = /^\/\/\/ svc:search (.+)\nmodel (\w+) \{/gm;
  for (let m = re.exec(schema); m; m = re.exec(schema)) {
    spec.set(
      m[2],
      m[1]
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  }
  return spec;
}

/** The PostgreSQL document expression: searched columns joined, lower-cased (ICU), split into words. */
function pgDocument(columns: string[]): string {
  const text = columns.map((c) => `coalesce(${q(c)}, '')`).join(` || ' ' || `);
  return `to_tsvector('simple'::regconfig, regexp_replace(lower((${text}) COLLATE "und-x-icu"), '[^[:alnum:]]+', ' ', 'g'))`;
}

function dropSql(provider: DatabaseProvider, table: string): string[] {
  if (provider === 'postgresql') return [`ALTER TABLE ${q(table)} DROP COLUMN IF EXISTS "__search";`];
  return [
    ...['insert', 'update', 'delete'].map((t) => `DROP TRIGGER IF EXISTS ${q(`${table}__search_${t}`)};`),
    `DROP TABLE IF EXISTS ${q(`${table}__search`)};`,
    `DROP TABLE IF EXISTS ${q(`${table}__search_key`)};`,
  ];
}

function createSql(provider: DatabaseProvider, table: string, columns: string[]): string[] {
  if (provider === 'postgresql') {
    return [
      `ALTER TABLE ${q(table)} ADD COLUMN "__search" tsvector GENERATED ALWAYS AS (${pgDocument(columns)}) STORED;`,
      `CREATE INDEX ${q(`${table}__search`)} ON ${q(table)} USING GIN ("__search");`,
    ];
  }
  const fts = q(`${table}__search`);
  const key = q(`${table}__search_key`);
  const cols = columns.map((_, i) => `"c${i}"`);
  const keyOf = (row: string) => `(SELECT "k" FROM ${key} WHERE "id" = ${row}."id")`;
  return [
    `CREATE VIRTUAL TABLE ${fts} USING fts5("id" UNINDEXED, ${cols.join(', ')}, tokenize = 'unicode61 remove_diacritics 0');`,
    `CREATE TABLE ${key} ("k" INTEGER PRIMARY KEY, "id" TEXT NOT NULL UNIQUE);`,
    `INSERT INTO ${key} ("id") SELECT "id" FROM ${q(table)} ORDER BY "id";`,
    `INSERT INTO ${fts} (rowid, "id", ${cols.join(', ')}) SELECT k."k", t."id", ${columns.map((c) => `t.${q(c)}`).join(', ')} FROM ${q(table)} t JOIN ${key} k ON k."id" = t."id";`,
    `CREATE TRIGGER ${q(`${table}__search_insert`)} AFTER INSERT ON ${q(table)} BEGIN
  INSERT INTO ${key} ("id") VALUES (new."id");
  INSERT INTO ${fts} (rowid, "id", ${cols.join(', ')}) VALUES (${keyOf('new')}, new."id", ${columns.map((c) => `new.${q(c)}`).join(', ')});
END;`,
    `CREATE TRIGGER ${q(`${table}__search_update`)} AFTER UPDATE OF ${columns.map(q).join(', ')} ON ${q(table)} BEGIN
  UPDATE ${fts} SET ${cols.map((c, i) => `${c} = new.${q(columns[i])}`).join(', ')} WHERE rowid = ${keyOf('new')};
END;`,
    `CREATE TRIGGER ${q(`${table}__search_delete`)} AFTER DELETE ON ${q(table)} BEGIN
  DELETE FROM ${fts} WHERE rowid = ${keyOf('old')};
  DELETE FROM ${key} WHERE "id" = old."id";
END;`,
  ];
}

const same = (a: string[] | undefined, b: string[] | undefined) => (a ?? []).join(',') === (b ?? []).join(',');

/**
 * The SQL that brings search objects from `previous` to `next` around Prisma's migration SQL.
 * @param prismaSql - the datamodel diff; a table it mentions gets its search objects rebuilt
 * @returns `before` (drops) and `after` (creates, with the index filled from existing rows); both
 *   empty when nothing about search changes
 */
export function searchMigration(provider: DatabaseProvider, previous: SearchSpec, next: SearchSpec, prismaSql: string): { before: string; after: string } {
  const before: string[] = [];
  const after: string[] = [];
  const tables = [...new Set([...previous.keys(), ...next.keys()])].sort();
  for (const table of tables) {
    const was = previous.get(table);
    const now = next.get(table);
    const touched = prismaSql.includes(q(table));
    if (same(was, now) && !touched) continue;
    if (was?.length) before.push(...dropSql(provider, table));
    if (now?.length) after.push(...createSql(provider, table, now));
  }
  const block = (lines: string[], title: string) => (lines.length ? `-- ${title}\n${lines.join('\n')}\n` : '');
  return { before: block(before, 'svc: drop full-text search objects'), after: block(after, 'svc: full-text search objects') };
}
