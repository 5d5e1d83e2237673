/**
 * @module The one migration that moves an app from the log store of one row per entry (`_svc_logs`,
 * model `SvcLogEntry`) to one row per batch (`_svc_log_batches`, runtime/logs/log-batches.ts): Prisma's
 * diff drops the old table before anything else; this moves the drop after the new table is made and
 * carries every entry over first (one batch per entry), so the console keeps the log of the days
 * before the upgrade. The name `_svc_logs` is then free for the view the runtime makes at start.
 * A later migration that changes `_svc_log_batches` drops that view first (PostgreSQL refuses to
 * change a table a view reads; SQLite refuses to rename tables while a view reads a missing one, as
 * Prisma's table redefinition does); the runtime makes it again at start.
 */
import type { DatabaseProvider } from '../../runtime/index.js';

const OLD = /^model \w+ \{[^}]*@@map\("_svc_logs"\)/m;
const NEW = /@@map\("_svc_log_batches"\)/;
const DROP = /^DROP TABLE "_svc_logs";\n?/m;
const DROP_VIEW = '-- The log store\'s view, made again at start (svc)\nDROP VIEW IF EXISTS "_svc_logs";\n';

const COLUMNS = ['id', 'time', 'kind', 'reqId', 'method', 'path', 'status', 'durationMs', 'identityId', 'identityKind', 'severity', 'source', 'message'];

/** The statements carrying the old table's rows into batches, then dropping it. */
function carry(provider: DatabaseProvider): string {
  const pairs = COLUMNS.map((c) => `'${c}', "${c}"`).join(', ');
  const entries = provider === 'postgresql' ? `json_build_array(json_strip_nulls(json_build_object(${pairs})))::text` : `json_array(json_object(${pairs}))`;
  return [
    '-- Carry the log store over: one batch per entry (svc)',
    `INSERT INTO "_svc_log_batches" ("id", "firstId", "first", "last", "instance", "count", "entries")`,
    `SELECT "id", "id", "time", "time", "instance", 1, ${entries} FROM "_svc_logs";`,
    'DROP TABLE "_svc_logs";',
    '',
  ].join('\n');
}

/**
 * Prisma's migration SQL from datamodel `previous` to `schema`, with the entries of the old log store
 * carried into the new one when this migration is the one replacing it, or the view `_svc_logs`
 * dropped first when it changes `_svc_log_batches`; otherwise `prismaSql` as it is.
 */
export function carryLogStore(provider: DatabaseProvider, previous: string | null, schema: string, prismaSql: string): string {
  if (previous !== null && NEW.test(previous) && prismaSql.includes('"_svc_log_batches"')) return `${DROP_VIEW}\n${prismaSql}`;
  if (previous === null || !OLD.test(previous) || !NEW.test(schema) || NEW.test(previous) || !DROP.test(prismaSql)) return prismaSql;
  const text = prismaSql.replace(DROP, '');
  return `${text.endsWith('\n') ? text : `${text}\n`}\n${carry(provider)}`;
}
