/**
 * Child aggregates in `svc generate` (DESIGN §3 "Child aggregates"): a valid one (dot paths through
 * the child's lookups included) reaches the manifest with its output type; a bad `of`, `via`, path,
 * aggregate type, child filter, or a child aggregate in a grouped query is refused naming the file and
 * JSON path; the OpenAPI row schema types the fields (count a non-null integer, sum/avg a nullable
 * number, min/max the property's type, nullable) and the agent's query tools list them.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { buildFiles } from '../../dist/generator/build-files.js';
import { DefinitionError, formatDiagnostic } from '../../dist/generator/validate/diagnostics.js';
import { loadAndValidate } from '../../dist/generator/validate/index.js';
import { filterProblems } from '../../dist/runtime/query/check-filters.js';
import { compileClient } from '../support/client-check.js';
import { runCli } from '../support/cli.js';

type Files = Record<string, unknown>;
const root = mkdtempSync(join(tmpdir(), 'svc-child-aggregates-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

function writeApp(files: Files): string {
  const dir = join(root, `app${++count}`);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), JSON.stringify(content, null, 2));
  }
  return dir;
}

const GET = [{ method: 'GET', roleNames: ['_AUTHENTICATED_USER'] }];
const app: Files = {
  'svc.json': { name: 'events' },
  'collections/Venue.json': { name: 'Venue', properties: { name: { type: 'string' } }, access: GET },
  'collections/Event.json': {
    name: 'Event',
    properties: { title: { type: 'string', required: true }, venue: { type: 'lookup', collection: 'Venue' } },
    access: GET,
  },
  'collections/Rsvp.json': {
    name: 'Rsvp',
    properties: {
      event: { type: 'lookup', collection: 'Event', required: true },
      backup: { type: 'lookup', collection: 'Event' },
      guests: { type: 'integer', default: 1 },
      fee: { type: 'decimal' },
      note: { type: 'string' },
      answeredAt: { type: 'date-time' },
      going: { type: 'boolean' },
      ticket: { type: 'blob' },
    },
    access: GET,
  },
  'views/Upcoming.json': { name: 'Upcoming', collection: 'Event', filter: 'title ne null' },
};

const attendance = (fields: Record<string, unknown>, extra: object = {}): Files => ({
  'queries/Attendance.json': { name: 'Attendance', from: 'Event', fields: { title: 'title', ...fields }, access: GET, ...extra },
});

async function problems(files: Files): Promise<string[]> {
  const err = await loadAndValidate(writeApp({ ...app, ...files }), {}, filterProblems).then(
    () => null,
    (e: unknown) => e,
  );
  if (err === null) return [];
  expect(err).toBeInstanceOf(DefinitionError);
  return (err as DefinitionError).diagnostics.map(formatDiagnostic);
}

const VALID = {
  rsvps: { count: 'id', of: 'Rsvp', via: 'event' },
  guests: { sum: 'guests', of: 'Rsvp', via: 'event', filter: 'guests gt 0' },
  avgFee: { avg: 'fee', of: 'Rsvp', via: 'event' },
  firstNote: { min: 'note', of: 'Rsvp', via: 'event' },
  lastAnswer: { max: 'answeredAt', of: 'Rsvp', via: 'event', filter: 'note sw "x"' },
  anyGoing: { max: 'going', of: 'Rsvp', via: 'event' },
  backups: { count: 'id', of: 'Rsvp', via: 'backup' },
  lastVenue: { max: 'event.venue.name', of: 'Rsvp', via: 'backup' },
};

describe('a valid child aggregate', () => {
  test('reaches the manifest with of, via, filter and its output type', async () => {
    const { manifest } = await loadAndValidate(writeApp({ ...app, ...attendance(VALID) }), {}, filterProblems);
    const q = manifest.queries.find((x) => x.name === 'Attendance')!;
    expect(q.idType).toBe('guid');
    expect(q.fields).toEqual({
      title: { path: 'title', type: 'string' },
      rsvps: { aggregate: 'count', path: 'id', type: 'integer', of: 'Rsvp', via: 'event' },
      guests: { aggregate: 'sum', path: 'guests', type: 'integer', of: 'Rsvp', via: 'event', filter: 'guests gt 0' },
      avgFee: { aggregate: 'avg', path: 'fee', type: 'decimal', of: 'Rsvp', via: 'event' },
      firstNote: { aggregate: 'min', path: 'note', type: 'string', of: 'Rsvp', via: 'event' },
      lastAnswer: { aggregate: 'max', path: 'answeredAt', type: 'date-time', of: 'Rsvp', via: 'event', filter: 'note sw "x"' },
      anyGoing: { aggregate: 'max', path: 'going', type: 'boolean', of: 'Rsvp', via: 'event' },
      backups: { aggregate: 'count', path: 'id', type: 'integer', of: 'Rsvp', via: 'backup' },
      lastVenue: { aggregate: 'max', path: 'event.venue.name', type: 'string', of: 'Rsvp', via: 'backup' },
    });
  });

  test('is typed in the OpenAPI row schema: count a non-null integer, the others nullable', async () => {
    const { manifest } = await loadAndValidate(writeApp({ ...app, ...attendance(VALID) }), {});
    const files = buildFiles(manifest);
    const doc = JSON.parse(files['openapi.json']);
    await SwaggerParser.validate(structuredClone(doc));
    const row = doc.components.schemas.Attendance;
    const types = Object.fromEntries(
      Object.entries(row.properties as Record<string, { type: unknown; format?: string }>).map(([k, v]) => [k, [v.type, v.format]]),
    );
    expect(types).toEqual({
      id: ['string', 'uuid'],
      title: [['string', 'null'], undefined],
      rsvps: ['integer', undefined],
      guests: [['integer', 'null'], undefined],
      avgFee: [['number', 'null'], undefined],
      firstNote: [['string', 'null'], undefined],
      lastAnswer: [['string', 'null'], 'date-time'],
      anyGoing: [['boolean', 'null'], undefined],
      backups: ['integer', undefined],
      lastVenue: [['string', 'null'], undefined],
    });
    expect(row.required).toEqual(['id', ...Object.keys(row.properties).filter((k) => k !== 'id')]);
    expect(row.properties.guests.description).toBe(
      'sum(guests) of the Rsvp rows whose event is this row and that match guests gt 0 (null when there are none)',
    );
    expect(row.properties.rsvps.description).toBe('count(id) of the Rsvp rows whose event is this row (0 when there are none)');
    // The agent's query tools name the fields, child aggregates included, where it filters, sorts and selects.
    const tools = JSON.parse(files['agent-tools.json']) as { all: { name: string; parameters: { properties: Record<string, { description: string }> } }[] };
    const list = tools.all.find((t) => t.name === 'listAttendance')!;
    const fields = 'Fields of Attendance: id, title, rsvps, guests, avgFee, firstNote, lastAnswer, anyGoing, backups, lastVenue';
    for (const p of ['filter', 'sortBy', 'select']) expect(list.parameters.properties[p].description).toContain(fields);
    expect(tools.all.find((t) => t.name === 'getAttendance')!.parameters.properties.select.description).toContain(fields);
    // The generated client types agree with the document.
    const client = await compileClient(files['client.ts'], doc);
    expect(client.output).toBe('');
    expect(files['client.ts']).toMatch(/rsvps: number;/);
  });
});

describe('generate refuses', () => {
  test.each<[string, Files, string[]]>([
    [
      'of naming no collection',
      attendance({ n: { count: 'id', of: 'Rsvps', via: 'event' } }),
      ['queries/Attendance.json: /fields/n/of: of "Rsvps" is not a collection'],
    ],
    [
      'of naming a view',
      attendance({ n: { count: 'id', of: 'Upcoming', via: 'event' } }),
      ['queries/Attendance.json: /fields/n/of: of "Upcoming" is a view, not a collection'],
    ],
    [
      'via that is not a property',
      attendance({ n: { count: 'id', of: 'Rsvp', via: 'evnt' } }),
      ['queries/Attendance.json: /fields/n/via: via "evnt" is not a property of Rsvp; lookups of Rsvp to Event: event, backup'],
    ],
    [
      'via that is not a lookup',
      attendance({ n: { count: 'id', of: 'Rsvp', via: 'guests' } }),
      ['queries/Attendance.json: /fields/n/via: via "guests" of Rsvp is integer, not a lookup; lookups of Rsvp to Event: event, backup'],
    ],
    [
      'via pointing at another collection than from',
      attendance({ n: { count: 'id', of: 'Event', via: 'venue' } }),
      ['queries/Attendance.json: /fields/n/via: via "venue" of Event points at Venue, not at Event (the query\'s from); Event has no lookup to Event'],
    ],
    [
      'of without via',
      attendance({ n: { count: 'id', of: 'Rsvp' } }),
      ['queries/Attendance.json: /fields/n: missing key "via": the lookup property of Rsvp that points at Event'],
    ],
    [
      'via without of',
      attendance({ n: { count: 'id', via: 'event' } }),
      ['queries/Attendance.json: /fields/n: missing key "of": a child aggregate names the child collection in "of" (and its lookup to Event in "via")'],
    ],
    [
      'two aggregate functions',
      attendance({ n: { count: 'id', sum: 'guests', of: 'Rsvp', via: 'event' } }),
      ['queries/Attendance.json: /fields/n: n must have exactly one key besides of, via and filter, one of: count, sum, avg, min, max'],
    ],
    [
      'a path that is not a property of of',
      attendance({ n: { sum: 'title', of: 'Rsvp', via: 'event' } }),
      ['queries/Attendance.json: /fields/n/sum: path "title": "title" is not a property of Rsvp'],
    ],
    [
      'a dot path through a non-lookup, or to an unknown property',
      attendance({ n: { max: 'guests.title', of: 'Rsvp', via: 'event' }, m: { max: 'event.nope', of: 'Rsvp', via: 'event' } }),
      [
        'queries/Attendance.json: /fields/n/max: path "guests.title": "guests" of Rsvp is not a lookup, so the path cannot continue past it',
        'queries/Attendance.json: /fields/m/max: path "event.nope": "nope" is not a property of Event',
      ],
    ],
    [
      'sum and avg of a non-numeric path, max of a blob',
      attendance({
        s: { sum: 'event.title', of: 'Rsvp', via: 'event' },
        a: { avg: 'answeredAt', of: 'Rsvp', via: 'event' },
        b: { max: 'ticket', of: 'Rsvp', via: 'event' },
      }),
      [
        'queries/Attendance.json: /fields/s/sum: sum needs an integer or decimal path of Rsvp; "event.title" is string',
        'queries/Attendance.json: /fields/a/avg: avg needs an integer or decimal path of Rsvp; "answeredAt" is date-time',
        'queries/Attendance.json: /fields/b/max: max cannot apply to a blob; "ticket" of Rsvp is a blob',
      ],
    ],
    [
      'a child aggregate in a grouped query',
      {
        'queries/Attendance.json': {
          name: 'Attendance',
          from: 'Event',
          groupBy: ['venue'],
          fields: { n: { count: 'id' }, r: { count: 'id', of: 'Rsvp', via: 'event' } },
          access: GET,
        },
      },
      [
        'queries/Attendance.json: /fields/r: field "r" is a child aggregate (of Rsvp), which counts children per Event row: a query with groupBy cannot have one (drop groupBy, or aggregate over Rsvp in a query from Rsvp)',
      ],
    ],
    [
      'an unknown key',
      attendance({ n: { count: 'id', of: 'Rsvp', via: 'event', where: 'x' } }),
      ['queries/Attendance.json: /fields/n/where: unknown key "where"; allowed keys: count, sum, avg, min, max, of, via, filter'],
    ],
  ])('%s', async (_title, files, want) => {
    expect(await problems(files)).toEqual(want);
  });

  test('svc generate exits non-zero and prints each problem with its file and JSON path', async () => {
    // Two files: filters are checked on the definitions that have no other problem.
    const dir = writeApp({
      ...app,
      ...attendance({ n: { count: 'id', of: 'Rsvp', via: 'guests' } }),
      'queries/Guests.json': { name: 'Guests', from: 'Event', fields: { m: { count: 'id', of: 'Rsvp', via: 'event', filter: 'nope eq 1' } }, access: GET },
    });
    const res = await runCli(['generate', dir]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('queries/Attendance.json: /fields/n/via: via "guests" of Rsvp is integer, not a lookup');
    expect(res.stderr).toMatch(/queries\/Guests\.json: \/fields\/m\/filter: .*unknown property "nope" on Rsvp/);
  });

  test('a child filter that is not valid for of, naming the field’s filter', async () => {
    const lines = await problems(
      attendance({
        n: { count: 'id', of: 'Rsvp', via: 'event', filter: 'title eq "x"' },
        m: { count: 'id', of: 'Rsvp', via: 'event', filter: 'guests eq "many"' },
      }),
    );
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^queries\/Attendance\.json: \/fields\/n\/filter: .*unknown property "title" on Rsvp/);
    expect(lines[1]).toMatch(/^queries\/Attendance\.json: \/fields\/m\/filter: /);
  });
});
