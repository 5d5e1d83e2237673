/**
 * @module The schema engine's two calls as the runtime's entry point exports them, loading the engine
 * module (Prisma's driver adapters and its WebAssembly glue, about a third of a second) on the first
 * call only: `svc serve` with nothing to migrate never loads it. Source: DESIGN §5.
 */
import type { DatabaseProvider } from '../manifest.js';

/** See `diffDatamodels` in schema-engine.ts: the SQL migrating datamodel `from` to `to` ('' when equal). */
export async function diffDatamodels(opts: { provider: DatabaseProvider; url: string; from: string | null; to: string }): Promise<string> {
  return (await import('./schema-engine.js')).diffDatamodels(opts);
}

/** See `applyMigrations` in schema-engine.ts: applies the pending migration folders; `{ applied: names }`. */
export async function applyMigrations(opts: {
  provider: DatabaseProvider;
  url: string;
  migrationsDir: string;
  through?: string;
}): Promise<{ applied: string[] }> {
  return (await import('./schema-engine.js')).applyMigrations(opts);
}
