/**
 * Thin wrapper around Prisma's WebAssembly schema engine (DESIGN §5): migration SQL by diffing two
 * datamodels, and applying a Prisma-format migrations folder. No native engine binary, no node flag:
 * the `.wasm` is instantiated here through the package's `schema_engine_bg.js` glue.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory, type SqlDriverAdapter, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { MigrationDirectory, MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm';
import type { DatabaseProvider } from '../manifest.js';

export type { DatabaseProvider };

type Glue = typeof import('@prisma/schema-engine-wasm/schema_engine_bg');
const GLUE_ID = '@prisma/schema-engine-wasm/schema_engine_bg';
const CACHE = Symbol.for('svc.schemaEngineWasm');
const NO_FILTERS = { externalTables: [], externalEnums: [] };

/** One wasm instance per glue module instance, shared via globalThis (test runners may reload this file). */
interface WasmState {
  glue: Glue;
  ready: Promise<void>;
  /** Pending JS timers armed by the engine (it never clears them, e.g. a 10 s migration-lock timeout). */
  timers: Set<NodeJS.Timeout>;
  /** Engines currently alive; when it drops to 0 the pending timers are cleared so the process can exit. */
  live: number;
}

async function loadEngine(): Promise<WasmState> {
  const glue: Glue = await import(GLUE_ID);
  const g = globalThis as { [CACHE]?: WasmState };
  if (g[CACHE]?.glue !== glue) {
    const state: WasmState = { glue, ready: Promise.resolve(), timers: new Set(), live: 0 };
    state.ready = (async () => {
      const wasmPath = path.join(path.dirname(createRequire(import.meta.url).resolve(GLUE_ID)), 'schema_engine_bg.wasm');
      const imports: Record<string, unknown> = { ...glue };
      for (const key of Object.keys(glue).filter((k) => k.startsWith('__wbg_setTimeout_'))) {
        imports[key] = (fn: () => void, ms: number) => {
          const t = setTimeout(() => (state.timers.delete(t), fn()), ms >>> 0);
          state.timers.add(t);
          return t;
        };
      }
      const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
        './schema_engine_bg.js': imports as WebAssembly.ModuleImports,
      });
      glue.__wbg_set_wasm(instance.exports);
      (instance.exports.__wbindgen_start as () => void)();
    })();
    g[CACHE] = state;
    state.ready.catch(() => delete g[CACHE]);
  }
  await g[CACHE]!.ready;
  return g[CACHE]!;
}

/** Engine log callback: silent unless env `SVC_DEBUG_ENGINE` is set (then to stderr). */
function engineLog(line: string): void {
  if (process.env.SVC_DEBUG_ENGINE) process.stderr.write(`[schema-engine] ${line.trimEnd()}\n`);
}

/** Flattens an engine error to one line (drops the span trace and the schema code-frame lines). */
function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg
    .split(/\n\s*0: /)[0]
    .split('\n')
    .filter((l) => !/^\s*(-->|\d*\s*\|)/.test(l))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function fail(message: string, cause: unknown): Error {
  const e = new Error(message, { cause }) as Error & { code?: string };
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code === 'string') e.code = code;
  return e;
}

/** Builds the driver-adapter factory; for PostgreSQL a `?schema=name` query param becomes the adapter's schema. */
function adapterFactory(provider: DatabaseProvider, url: string): SqlMigrationAwareDriverAdapterFactory {
  if (provider === 'sqlite') return new PrismaBetterSqlite3({ url });
  const u = new URL(url);
  const schema = u.searchParams.get('schema') ?? undefined;
  u.searchParams.delete('schema');
  return new PrismaPg({ connectionString: u.toString() }, schema ? { schema } : undefined);
}

/**
 * adapter-pg's `executeScript` splits the script on every `;` (breaking `DEFAULT 'a;b'`) and runs the
 * statements one by one (a failing migration stays half-applied). Send the script whole instead, as one
 * simple query: PostgreSQL runs it in an implicit transaction, like Prisma's native engine does.
 */
function runScriptsWhole(adapter: SqlDriverAdapter): void {
  const pg = adapter as unknown as { underlyingDriver(): { query(sql: string): Promise<unknown> }; onError(e: unknown): never };
  const pool = pg.underlyingDriver();
  adapter.executeScript = async (script) => {
    await pool.query(script).catch((e: unknown) => pg.onError(e));
  };
}

/** Runs `fn` with a fresh engine; always frees the engine and disposes every adapter connection it opened. */
async function withEngine<T>(provider: DatabaseProvider, url: string, fn: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const wasm = await loadEngine();
  const raw = adapterFactory(provider, url);
  const opened: SqlDriverAdapter[] = [];
  const track = async (p: Promise<SqlDriverAdapter>) => {
    const a = await p;
    opened.push(a);
    if (provider === 'postgresql') runScriptsWhole(a);
    return a;
  };
  const tracking: SqlMigrationAwareDriverAdapterFactory = {
    provider: raw.provider,
    adapterName: raw.adapterName,
    connect: () => track(raw.connect()),
    connectToShadowDb: () => track(raw.connectToShadowDb()),
  };
  let engine: SchemaEngine | undefined;
  wasm.live++;
  try {
    try {
      engine = await wasm.glue.SchemaEngine.new({ datamodels: undefined }, engineLog, bindMigrationAwareSqlAdapterFactory(tracking));
    } catch (err) {
      throw fail(`schema engine could not start (${provider}): ${oneLine(err)}`, err);
    }
    return await fn(engine);
  } finally {
    engine?.free();
    for (const a of opened) await a.dispose().catch(() => undefined);
    if (--wasm.live === 0) {
      for (const t of wasm.timers) clearTimeout(t);
      wasm.timers.clear();
    }
  }
}

/**
 * Returns the SQL script migrating datamodel `from` (`null` = empty database) to `to`; empty string
 * when nothing changes. `from`/`to` are complete Prisma schema texts for `provider`. The database is
 * never introspected: SQLite diffs in memory (the file at `url` is not touched); PostgreSQL needs
 * `url` to reach an existing database (its tables are not read).
 * @throws Error `schema diff failed: <engine message>` (invalid schema, unreachable server...).
 * Source: DESIGN §5.
 */
export async function diffDatamodels(opts: { provider: DatabaseProvider; url: string; from: string | null; to: string }): Promise<string> {
  const target = (content: string) => ({ tag: 'schemaDatamodel' as const, files: [{ path: 'schema.prisma', content }] });
  const url = opts.provider === 'sqlite' ? ':memory:' : opts.url;
  return withEngine(opts.provider, url, async (engine) => {
    try {
      const res = await engine.diff({
        from: opts.from === null ? { tag: 'empty' } : target(opts.from),
        to: target(opts.to),
        script: true,
        exitCode: true,
        filters: NO_FILTERS,
      });
      return res.exitCode === 0 ? '' : (res.stdout ?? '');
    } catch (err) {
      throw fail(`schema diff failed: ${oneLine(err)}`, err);
    }
  });
}

/** Reads a Prisma migrations folder the way the Prisma CLI does (folders sorted by name). */
async function readMigrations(dir: string): Promise<MigrationList> {
  const lockfile = { path: 'migration_lock.toml', content: await readFile(path.join(dir, 'migration_lock.toml'), 'utf8').catch(() => null) };
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const migrationDirectories: MigrationDirectory[] = [];
  for (const d of entries.filter((e) => e.isDirectory())) {
    const content = await readFile(path.join(dir, d.name, 'migration.sql'), 'utf8').then(
      (value) => ({ tag: 'ok' as const, value }),
      (e: Error) => ({ tag: 'error' as const, value: e.message }),
    );
    migrationDirectories.push({ path: d.name, migrationFile: { path: 'migration.sql', content } });
  }
  migrationDirectories.sort((a, b) => a.path.localeCompare(b.path));
  return { baseDir: dir, lockfile, shadowDbInitScript: '', migrationDirectories };
}

/**
 * Applies every migration folder (`<migrationsDir>/<name>/migration.sql`) not yet recorded in
 * `_prisma_migrations` (up to `through`, when given), in name order; returns `{ applied: names }` (empty when up to date). For
 * SQLite (`file:/abs/path.db`) the file's parent folder is created if missing.
 * @throws Error `migration <name> failed: <engine message>` when a script fails (Prisma records it as
 * failed; later runs then refuse with `applying migrations failed: ...` until it is resolved), or
 * `applying migrations failed: <engine message>` for other errors (edited migration, unreachable DB...).
 * Source: DESIGN §5.
 */
export async function applyMigrations(opts: {
  provider: DatabaseProvider;
  url: string;
  migrationsDir: string;
  /** Apply only the folders up to this name (inclusive): one migration at a time (`applyMigrationsSafely`). */
  through?: string;
}): Promise<{ applied: string[] }> {
  if (opts.provider === 'sqlite') {
    const file = opts.url.replace(/^file:/, '').replace(/\?.*$/, '');
    const abs = file.startsWith('//') ? fileURLToPath(`file:${file}`) : file;
    if (abs !== ':memory:') await mkdir(path.dirname(path.resolve(abs)), { recursive: true });
  }
  const migrationsList = await readMigrations(path.resolve(opts.migrationsDir));
  const through = opts.through;
  if (through !== undefined) migrationsList.migrationDirectories = migrationsList.migrationDirectories.filter((d) => d.path <= through);
  return withEngine(opts.provider, opts.url, async (engine) => {
    try {
      const res = await engine.applyMigrations({ migrationsList, filters: NO_FILTERS });
      return { applied: res.appliedMigrationNames };
    } catch (err) {
      const name = /migration_name="([^"]+)"/.exec(err instanceof Error ? err.message : '')?.[1];
      throw fail(name ? `migration ${name} failed: ${oneLine(err)}` : `applying migrations failed: ${oneLine(err)}`, err);
    }
  });
}

/**
 * Content of `migration_lock.toml`, byte-identical to what Prisma writes.
 * Source: DESIGN §5.
 */
export function migrationLockToml(provider: DatabaseProvider): string {
  return `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${provider}"\n`;
}
