/**
 * Function schedules in `svc generate` (DESIGN §12): a type-2 function's `"schedule"` reaches the
 * manifest as written; an invalid cron (bad value, wrong field count), an unknown IANA time zone, a
 * schedule on a type-1 function and an unknown key are refused naming the file and JSON path.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { DefinitionError } from '../../dist/generator/validate/diagnostics.js';
import { loadAndValidate } from '../../dist/generator/validate/index.js';
import { filterProblems } from '../../dist/runtime/query/check-filters.js';
import { writeAppFolder } from '../support/trigger-app.js';

type Files = Record<string, unknown>;
const root = mkdtempSync(join(tmpdir(), 'svc-schedules-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

const CODE = 'export default async function run() { return {}; }\n';
const app = (schedule: unknown, functionTypeId = 2): Files => ({
  'svc.json': { name: 'shop' },
  'functions/nightly.json': {
    name: 'nightly',
    functionTypeId,
    endpoint: '/nightly',
    ...(functionTypeId === 1 ? { access: { GET: ['_AUTHENTICATED_USER'] } } : {}),
    schedule,
  },
  'functions/nightly.ts': CODE,
});

async function problems(files: Files): Promise<string[]> {
  const err = await loadAndValidate(writeAppFolder(join(root, `app${++count}`), files), {}, filterProblems).then(
    () => null,
    (e: unknown) => e,
  );
  if (err === null) return [];
  expect(err).toBeInstanceOf(DefinitionError);
  return (err as DefinitionError).diagnostics.map((d) => `${d.file} ${d.path}: ${d.code} | ${d.message}`);
}

describe('a valid schedule', () => {
  test('reaches the manifest as written', async () => {
    const schedule = { cron: '0 3 * * *', timezone: 'Europe/Oslo', catchUp: false };
    const { manifest } = await loadAndValidate(writeAppFolder(join(root, `app${++count}`), app(schedule)), {}, filterProblems);
    expect(manifest.functions.find((f) => f.name === 'nightly')?.schedule).toEqual(schedule);
  });

  test('six fields (seconds first) are accepted, and no schedule emits none', async () => {
    expect(await problems(app({ cron: '*/2 * * * * *' }))).toEqual([]);
    const files = app(undefined);
    const { manifest } = await loadAndValidate(writeAppFolder(join(root, `app${++count}`), files), {}, filterProblems);
    expect(manifest.functions[0]).not.toHaveProperty('schedule');
  });
});

describe('a refused schedule', () => {
  test.each([
    ['an out-of-range value', { cron: '61 * * * *' }, '/schedule/cron: DEF_INVALID_CRON'],
    ['three fields', { cron: '* * *' }, '/schedule/cron: DEF_INVALID_CRON'],
    ['seven fields', { cron: '0 0 0 * * * 2030' }, '/schedule/cron: DEF_INVALID_CRON'],
    ['an unknown time zone', { cron: '0 3 * * *', timezone: 'Mars/Olympus' }, '/schedule/timezone: DEF_UNKNOWN_TIME_ZONE'],
  ])('%s', async (_, schedule, expected) => {
    const out = await problems(app(schedule));
    expect(out).toHaveLength(1);
    expect(out[0]).toContain(`functions/nightly.json ${expected}`);
  });

  test('on a type-1 function', async () => {
    const out = await problems(app({ cron: '0 3 * * *' }, 1));
    expect(out).toEqual([expect.stringContaining('functions/nightly.json /schedule: DEF_SCHEDULE_NOT_TYPE_2')]);
  });

  test('an unknown key or a missing cron', async () => {
    expect((await problems(app({ cron: '0 3 * * *', every: 'day' }))).join('\n')).toContain('functions/nightly.json /schedule');
    expect((await problems(app({ timezone: 'UTC' }))).join('\n')).toContain('functions/nightly.json /schedule');
  });
});
