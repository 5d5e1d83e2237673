/**
 * Types read from function code (SPEC §4.8 rule 7) on the `typed` fixture: which source answers each
 * side (TBody/TRes, Input/Output, return type, narrowed query), opaque objects for types that do not
 * convert, script form skipped; plus `.d.ts`/test files and deterministic output.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAndValidate } from '../../../dist/generator/validate/index.js';
import { readCodeTypes } from '../../../dist/generator/code-types/read-code-types.js';
import { ROOT } from '../../support/cli.js';

const TYPED = join(ROOT, 'test/fixtures/apps/typed');
const LONG = 'reindex_every_note_in_the_archive_and_report_progress_to_the_use';
const { manifest } = await loadAndValidate(TYPED, {});
const typesOf = (name: string) => manifest.functions.find((f) => f.name === name)?.codeTypes;

const CASES: [string, { given: string; want: unknown }][] = [
  [
    'TBody and TRes of the context type',
    {
      given: 'greet',
      want: {
        body: {
          description: 'The body the code expects: `name` is also declared (and enforced); `shout` is advisory.',
          type: 'object',
          properties: { name: { type: 'string' }, shout: { type: 'boolean' } },
          required: ['name'],
        },
        response: { type: 'object', properties: { greeting: { type: 'string' }, length: { type: 'number' } }, required: ['greeting', 'length'] },
      },
    },
  ],
  [
    'export type Input / interface Output; the return type is ignored because the code assigns ctx.res',
    {
      given: 'sum',
      want: {
        body: { type: 'object', properties: { values: { type: 'array', items: { type: 'number' } } }, required: ['values'] },
        response: { type: 'object', properties: { total: { type: 'number' }, count: { type: 'number' } }, required: ['count', 'total'] },
      },
    },
  ],
  [
    'awaited return type and a narrowed query',
    {
      given: 'stats',
      want: {
        response: {
          type: 'object',
          properties: { count: { type: 'number' }, from: { type: ['null', 'string'] }, kinds: { type: 'array', items: { type: 'string' } } },
          required: ['count', 'from', 'kinds'],
        },
        query: { type: 'object', properties: { from: { type: 'string' }, limit: { type: 'number' } } },
      },
    },
  ],
  ['functions, Map and bigint become opaque objects', { given: 'opaque', want: { body: { type: 'object' }, response: { type: 'object' } } }],
  ['script form has no code types', { given: 'ping', want: undefined }],
  [
    'JSDoc context type in an .mjs file',
    {
      given: LONG,
      want: {
        body: { type: 'object', properties: { since: { type: 'string' }, batch: { type: 'number' } }, required: ['since'] },
        response: { type: 'object', properties: { reindexed: { type: 'number' }, since: { type: 'string' } }, required: ['reindexed', 'since'] },
      },
    },
  ],
];

describe('readCodeTypes', () => {
  it.each(CASES)('%s', (_title, { given, want }) => {
    expect(typesOf(given)).toEqual(want);
  });

  it('reads the same types on every run', async () => {
    const again = await loadAndValidate(TYPED, {});
    expect(JSON.stringify(again.manifest.functions)).toBe(JSON.stringify(manifest.functions));
  });

  it('skips .d.ts and test files and a default export that is not a function', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-codetypes-'));
    try {
      mkdirSync(join(dir, 'functions'));
      const body = 'export type Input = { a: string };\nexport default (ctx: { req: { bodyJson: { a: string } } }) => ({ ok: true });\n';
      writeFileSync(
        join(dir, 'functions/a.d.ts'),
        'export type Input = { a: string };\ndeclare const f: (ctx: unknown) => { ok: boolean };\nexport default f;\n',
      );
      writeFileSync(join(dir, 'functions/b.test.ts'), body);
      writeFileSync(join(dir, 'functions/c.ts'), 'export default { not: "a function" };\n');
      writeFileSync(join(dir, 'functions/d.ts'), body);
      const types = readCodeTypes(dir, [
        { name: 'a', codeFile: 'functions/a.d.ts' },
        { name: 'b', codeFile: 'functions/b.test.ts' },
        { name: 'c', codeFile: 'functions/c.ts' },
        { name: 'd', codeFile: 'functions/d.ts' },
        { name: 'e', codeFile: null },
      ]);
      expect([...types.keys()]).toEqual(['d']);
      expect(types.get('d')?.body).toEqual({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
