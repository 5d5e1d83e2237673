/**
 * Trigger definitions in `svc generate` (DESIGN §12): a valid `triggers/<Name>.json` reaches the
 * manifest with `maxAttempts` defaulted to 10, and every hostile definition is refused naming the file
 * and JSON path: a bad or mistyped filter, an unknown collection or a view, `changed` naming an unknown
 * property or a system field or used without `update`, both or neither of `function`/`webhook`, a
 * missing or type-1 function, a literal webhook secret (not echoed), a bad URL, an out-of-range
 * `maxAttempts`, an unknown key, a name that is not the file name.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { DefinitionError, formatDiagnostic } from '../../dist/generator/validate/diagnostics.js';
import { loadAndValidate } from '../../dist/generator/validate/index.js';
import { filterProblems } from '../../dist/runtime/query/check-filters.js';
import { writeAppFolder } from '../support/trigger-app.js';

type Files = Record<string, unknown>;
const root = mkdtempSync(join(tmpdir(), 'svc-triggers-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

const writeApp = (files: Files): string => writeAppFolder(join(root, `app${++count}`), files);

const GET = [{ method: 'GET', roleNames: ['_AUTHENTICATED_USER'] }];
const CODE = 'export default async function run() { return {}; }\n';
const app: Files = {
  'svc.json': { name: 'shop' },
  'collections/Order.json': {
    name: 'Order',
    properties: { total: { type: 'decimal' }, paid: { type: 'boolean' }, note: { type: 'string' } },
    access: GET,
  },
  'views/PaidOrders.json': { name: 'PaidOrders', collection: 'Order', filter: 'paid eq true' },
  'functions/sendReceipt.json': { name: 'sendReceipt', functionTypeId: 2, endpoint: '/sendReceipt' },
  'functions/sendReceipt.ts': CODE,
  'functions/hello.json': { name: 'hello', functionTypeId: 1, endpoint: '/hello', access: { GET: ['_AUTHENTICATED_USER'] } },
  'functions/hello.ts': CODE,
};

const trigger = (fields: Record<string, unknown>, name = 'receiptOnPaid'): Files => ({
  [`triggers/${name}.json`]: { name: 'receiptOnPaid', collection: 'Order', on: ['create', 'update'], function: 'sendReceipt', ...fields },
});

async function problems(files: Files): Promise<string[]> {
  const err = await loadAndValidate(writeApp({ ...app, ...files }), {}, filterProblems).then(
    () => null,
    (e: unknown) => e,
  );
  if (err === null) return [];
  expect(err).toBeInstanceOf(DefinitionError);
  // `file path: CODE` first (what the cases match), then the readable message.
  return (err as DefinitionError).diagnostics.map((d) => `${d.file} ${d.path}: ${d.code} | ${formatDiagnostic(d)}`);
}

describe('a valid trigger', () => {
  test('reaches the manifest with maxAttempts defaulted to 10', async () => {
    const files = {
      ...app,
      ...trigger({ filter: 'paid eq true and total gt 10', changed: ['paid'] }),
      'triggers/hook.json': {
        name: 'hook',
        collection: 'Order',
        on: ['delete'],
        webhook: { url: '${env.HOOK_URL}', secret: '${secrets.HOOK}' },
        maxAttempts: 3,
      },
    };
    const { manifest } = await loadAndValidate(writeApp(files), {}, filterProblems);
    expect(manifest.triggers).toEqual([
      { name: 'hook', collection: 'Order', on: ['delete'], webhook: { url: '${env.HOOK_URL}', secret: '${secrets.HOOK}' }, maxAttempts: 3 },
      {
        name: 'receiptOnPaid',
        collection: 'Order',
        on: ['create', 'update'],
        filter: 'paid eq true and total gt 10',
        changed: ['paid'],
        function: 'sendReceipt',
        maxAttempts: 10,
      },
    ]);
  });

  test('an app without triggers has no triggers key in its manifest', async () => {
    const { manifest } = await loadAndValidate(writeApp(app), {}, filterProblems);
    expect('triggers' in manifest).toBe(false);
  });
});

describe('a hostile trigger is refused naming the file and JSON path', () => {
  const F = 'triggers/receiptOnPaid.json';
  test.each([
    ['a filter that does not parse', { filter: 'paid eq eq' }, `${F} /filter: DEF_INVALID_FILTER`],
    ['a filter on an unknown property', { filter: 'secret eq 1' }, `${F} /filter: DEF_INVALID_FILTER`],
    ['a filter comparing a boolean to a string', { filter: 'paid eq "yes"' }, `${F} /filter: DEF_INVALID_FILTER`],
    ['a filter using exp()', { filter: "createdBy eq exp('me()')" }, `${F} /filter: DEF_INVALID_FILTER`],
    ['an unknown collection', { collection: 'Ordr' }, `${F} /collection: DEF_UNKNOWN_COLLECTION`],
    ['a view instead of a collection', { collection: 'PaidOrders' }, `${F} /collection: DEF_NOT_A_COLLECTION`],
    ['changed naming an unknown property', { changed: ['colour'] }, `${F} /changed/0: DEF_UNKNOWN_PROPERTY`],
    ['changed naming a system field', { changed: ['updatedAt'] }, `${F} /changed/0: DEF_UNKNOWN_PROPERTY`],
    ['changed without update', { on: ['create'], changed: ['paid'] }, `${F} /changed: DEF_CHANGED_WITHOUT_UPDATE`],
    ['both function and webhook', { webhook: { url: 'https://example.com/h', secret: '${secrets.H}' } }, `${F} : DEF_TRIGGER_TARGET`],
    ['neither function nor webhook', { function: undefined }, `${F} : DEF_TRIGGER_TARGET`],
    ['a function that does not exist', { function: 'nope' }, `${F} /function: DEF_UNKNOWN_FUNCTION`],
    ['a type-1 function', { function: 'hello' }, `${F} /function: DEF_FUNCTION_NOT_TYPE_2`],
    ['a webhook URL that is not http(s)', { function: undefined, webhook: { url: 'ftp://x/y', secret: '${env.S}' } }, `${F} /webhook/url: DEF_INVALID_VALUE`],
    ['an empty on', { on: [] }, `${F} /on: DEF_INVALID_VALUE`],
    ['an unknown operation', { on: ['insert'] }, `${F} /on/0: DEF_INVALID_VALUE`],
    ['maxAttempts 0', { maxAttempts: 0 }, `${F} /maxAttempts: DEF_INVALID_VALUE`],
    ['maxAttempts 101', { maxAttempts: 101 }, `${F} /maxAttempts: DEF_INVALID_VALUE`],
    ['maxAttempts 2.5', { maxAttempts: 2.5 }, `${F} /maxAttempts: DEF_WRONG_TYPE`],
    ['an unknown key', { retries: 3 }, `${F} /retries: DEF_UNKNOWN_KEY`],
  ])('%s', async (_what, fields, expected) => {
    const found = await problems(trigger(fields));
    expect(
      found.some((p) => p.includes(expected)),
      found.join('\n'),
    ).toBe(true);
  });

  test('a literal webhook secret, without echoing it', async () => {
    const found = await problems(trigger({ function: undefined, webhook: { url: 'https://example.com/h', secret: 'whsec_TOPSECRET' } }));
    expect(
      found.some((p) => p.includes(`${F} /webhook/secret`) && p.includes('${secrets.NAME}')),
      found.join('\n'),
    ).toBe(true);
    expect(found.join('\n')).not.toContain('TOPSECRET');
  });

  test('a name that is not the file name', async () => {
    const found = await problems(trigger({}, 'other'));
    expect(
      found.some((p) => p.includes('triggers/other.json /name: DEF_FILE_NAME_MISMATCH')),
      found.join('\n'),
    ).toBe(true);
  });
});
