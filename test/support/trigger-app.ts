/**
 * An app folder written from a map of files (JSON values or text), and the small trigger fixture app the
 * capture tests share (DESIGN §12): `Order` with two triggers (`created` on create/delete with a quoted
 * string filter, `paidNow` on update with `filter` and `changed`) and `Note` without any.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Writes each file of `files` under `dir` (objects as JSON, strings as they are); returns `dir`. */
export function writeAppFolder(dir: string, files: Record<string, unknown>): string {
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  }
  return dir;
}

/** The fixture app of the capture tests. */
export const TRIGGER_APP: Record<string, unknown> = {
  'svc.json': { name: 'shop' },
  'collections/Order.json': { name: 'Order', properties: { total: { type: 'decimal' }, paid: { type: 'boolean' }, note: { type: 'string' } } },
  'collections/Note.json': { name: 'Note', properties: { text: { type: 'string' } } },
  'functions/sendReceipt.json': { name: 'sendReceipt', functionTypeId: 2, endpoint: '/sendReceipt' },
  'functions/sendReceipt.ts': 'export default async function run() { return {}; }\n',
  'triggers/created.json': { name: 'created', collection: 'Order', on: ['create', 'delete'], filter: 'note ne "it\'s skip"', function: 'sendReceipt' },
  'triggers/paidNow.json': {
    name: 'paidNow',
    collection: 'Order',
    on: ['update'],
    filter: 'paid eq true',
    changed: ['paid'],
    function: 'sendReceipt',
    maxAttempts: 3,
  },
};
