/**
 * @module Reads an app's system tables straight from its database (SQLite file or PostgreSQL), for
 * tests that must look behind the API: the stored signing key (to forge tokens), stored hashes.
 */
import Database from 'better-sqlite3';
import pg from 'pg';

/** Runs one read-only SELECT against the app database named by `DATABASE_URL` in `env`. */
export async function selectRows(env: NodeJS.ProcessEnv, text: string): Promise<Record<string, unknown>[]> {
  const url = env.DATABASE_URL!;
  if (url.startsWith('file:')) {
    const db = new Database(url.slice('file:'.length), { readonly: true });
    try {
      return db.prepare(text).all() as Record<string, unknown>[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}
