/**
 * Every property type of `PROPERTY_TYPE_TABLE` (runtime/contract/property-types.ts, issue 21 §4) walked
 * end to end on every backend: one app whose collection has one property of each type, a group query
 * per groupable type and a function taking each function-input type, generated from the table itself;
 * then write, read back (and a default), filter (eq, and gt where the type orders; refused where it does not), the
 * OpenAPI document, the function input checker and the group key. A new table entry is covered
 * automatically: it gets a property, a query and a function field, and the test fails until
 * `EXAMPLES` gives it values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, type PreparedApp } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { bytesOf, sha256, uploadFile } from '../support/blobs.js';
import {
  collectionInputSchema,
  propertyJsonSchema,
  PROPERTY_TYPES,
  typeBehaviour,
  type AppManifest,
  type PropertyType,
} from '../../dist/runtime/contract/index.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

/**
 * Two values per type, ascending, as written (`read`: as read back when it differs), and values the
 * API refuses: `invalid` in a row or function body, `queryInvalid` in a function's query string.
 * A lookup's values are the ids of the two rows (filled in at run time); a blob is uploaded.
 */
interface Example {
  values: [unknown, unknown];
  read?: [unknown, unknown];
  invalid: unknown;
  queryInvalid?: string;
}
const EXAMPLES: Record<PropertyType, Example> = {
  string: { values: ['apple', 'pear'], invalid: 5 },
  text: { values: ['alpha text', 'omega text'], invalid: true },
  integer: { values: [3, 42], invalid: 1.5, queryInvalid: '1.5' },
  decimal: { values: ['12.50', 99.25], read: [12.5, 99.25], invalid: 'cheap', queryInvalid: 'cheap' },
  boolean: { values: [false, true], invalid: 'yes', queryInvalid: 'maybe' },
  date: { values: ['2024-01-31', '2024-02-29'], invalid: '2024-13-01', queryInvalid: '2024-13-01' },
  'date-time': {
    values: ['2024-01-31T10:00:00+02:00', '2024-03-01T00:00:00Z'],
    read: ['2024-01-31T08:00:00.000Z', '2024-03-01T00:00:00.000Z'],
    invalid: 'yesterday',
    queryInvalid: 'yesterday',
  },
  guid: {
    values: ['0B8E6E4C-0000-4000-8000-000000000001', '0b8e6e4c-0000-4000-8000-00000000000f'],
    read: ['0b8e6e4c-0000-4000-8000-000000000001', '0b8e6e4c-0000-4000-8000-00000000000f'],
    invalid: '123',
    queryInvalid: '123',
  },
  lookup: { values: [null, null], invalid: 'not-a-guid' },
  blob: { values: [null, null], invalid: 'bytes' },
};

const field = (t: string): string => `v_${t.replace(/-/g, '_')}`;
const queryName = (t: string): string => `By_${t.replace(/-/g, '_')}`;
const ANYONE = ['_ANONYMOUS_USER'];
const INPUT_TYPES = PROPERTY_TYPES.filter((t) => typeBehaviour(t).functionInput);
const GROUPABLE = PROPERTY_TYPES.filter((t) => typeBehaviour(t).filter !== null);
const DEFAULTED = PROPERTY_TYPES.filter((t) => typeBehaviour(t).defaultProblem({ type: t }, EXAMPLES[t].values[1] as string | number | boolean) === null);

/** The app folder, written from the table: collection `Typed`, queries `By_<type>`, function `takes`. */
function writeSource(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-types-src-'));
  for (const sub of ['collections', 'queries', 'functions']) mkdirSync(join(dir, sub));
  writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'types' }));
  const properties: Record<string, object> = Object.fromEntries(
    PROPERTY_TYPES.map((t) => [field(t), { type: t, ...(typeBehaviour(t).keys.includes('collection') && { collection: 'Typed' }) }]),
  );
  // Beside each type that takes a default, a property defaulting to its second value.
  for (const t of DEFAULTED) properties[`d_${field(t)}`] = { type: t, default: EXAMPLES[t].values[1] };
  const access = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((method) => ({ method, roleNames: ANYONE }));
  writeFileSync(join(dir, 'collections', 'Typed.json'), JSON.stringify({ name: 'Typed', properties, access }));
  for (const t of GROUPABLE) {
    const q = {
      name: queryName(t),
      from: 'Typed',
      groupBy: [field(t)],
      fields: { value: field(t), n: { count: 'id' } },
      access: [{ method: 'GET', roleNames: ANYONE }],
    };
    writeFileSync(join(dir, 'queries', `${queryName(t)}.json`), JSON.stringify(q));
  }
  const fn = {
    name: 'takes',
    functionTypeId: 1,
    endpoint: '/takes',
    queryParams: INPUT_TYPES.map((t) => ({ name: `q_${field(t)}`, type: t })),
    requestBody: INPUT_TYPES.map((t) => ({ name: `b_${field(t)}`, type: t })),
    access: { GET: ANYONE, POST: ANYONE },
  };
  writeFileSync(join(dir, 'functions', 'takes.json'), JSON.stringify(fn));
  writeFileSync(
    join(dir, 'functions', 'takes.ts'),
    'export default (ctx: { req: { query: unknown; bodyJson: unknown } }) => ({ query: ctx.req.query, body: ctx.req.bodyJson });\n',
  );
  return dir;
}

/** A value as read, as a filter literal: strings (and a lookup's id) quoted, numbers and booleans bare (SPEC §4.3). */
const literal = (v: unknown): string =>
  typeof v === 'object' && v !== null ? JSON.stringify((v as { id: string }).id) : typeof v === 'string' ? JSON.stringify(v) : String(v);
/** A value as read, as a group key's canonical text (a lookup: its id). */
const keyText = (v: unknown): string => (typeof v === 'object' && v !== null ? (v as { id: string }).id : String(v));
/** A value as a query-string parameter. */
const queryText = (v: unknown): string => String(v);
const withoutDescription = (s: Record<string, unknown>): Record<string, unknown> => {
  const { description: _, ...rest } = s;
  return rest;
};

let source: string;
beforeAll(() => {
  source = writeSource();
});
afterAll(() => rmSync(source, { recursive: true, force: true }));

function typeWalk(backend: Backend): void {
  describe(`every property type on ${backend}`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let base: string;
    let manifest: AppManifest;
    let doc: any;
    const ids: string[] = [];
    const examples = structuredClone(EXAMPLES);
    const rows: any[] = [];
    let blob: { sha256: string; size: number };

    beforeAll(async () => {
      app = await prepareApp(source, backend);
      server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
      base = server.url;
      manifest = JSON.parse(readFileSync(join(app.dir, '.svc', 'manifest.json'), 'utf8'));
      doc = (await call(base, 'GET', '/_openapi')).json;
      // Two rows: every written type takes its first value in row 0 and its second in row 1.
      const written = PROPERTY_TYPES.filter((t) => t !== 'lookup' && t !== 'blob');
      const bodies = [0, 1].map((i) => Object.fromEntries(written.map((t) => [field(t), examples[t].values[i]])));
      const created = await call(base, 'POST', '/Typed', bodies);
      expect(created.status, created.text).toBe(201);
      ids.push(...created.json.data);
      // Lookups point at the rows themselves, the lower id from row 0 so the values ascend.
      examples.lookup.values = [...ids].sort() as [string, string];
      examples.lookup.read = examples.lookup.values.map((id) => ({ id })) as [unknown, unknown];
      for (const i of [0, 1])
        expect((await call(base, 'PATCH', `/Typed/${ids[i]}`, { [field('lookup')]: { id: examples.lookup.values[i] } })).status).toBe(200);
      const bytes = bytesOf(1000);
      const up = await uploadFile(`${base}/Typed/${ids[0]}/${field('blob')}`, bytes, { name: 'a.bin' });
      expect(up.status, JSON.stringify(up.json)).toBe(200);
      blob = { sha256: sha256(bytes), size: bytes.length };
      for (const id of ids) rows.push((await call(base, 'GET', `/Typed/${id}?lookups=id`)).json);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('has an example for every type of the table, and nothing else', () => {
      expect(Object.keys(EXAMPLES).sort()).toEqual([...PROPERTY_TYPES].sort());
    });

    describe.each(PROPERTY_TYPES.map((t) => [t]))('%s', (type) => {
      const name = field(type);
      const behaviour = typeBehaviour(type);
      const expected = (i: 0 | 1) => (examples[type].read ?? examples[type].values)[i];

      it('reads back what was written', () => {
        if (type === 'blob') {
          expect(rows[0][name]).toMatchObject({ name: 'a.bin', size: blob.size, sha256: blob.sha256 });
          expect(rows[1][name]).toBeNull();
        } else {
          expect([rows[0][name], rows[1][name]]).toEqual([expected(0), expected(1)]);
        }
        if (DEFAULTED.includes(type)) expect(rows[0][`d_${name}`]).toEqual(expected(1));
      });

      it('refuses a wrong value with 400 naming the property', async () => {
        const r = await call(base, 'POST', '/Typed', { [name]: examples[type].invalid });
        expect(r.status).toBe(400);
        expect(r.json.details).toEqual([expect.objectContaining({ path: `/${name}` })]);
      });

      it('filters by it: eq finds one row; gt finds the greater where the type orders, else 400', async () => {
        const filter = async (op: string) => call(base, 'GET', `/Typed?lookups=id&filter=${encodeURIComponent(`${name} ${op} ${literal(expected(0))}`)}`);
        if (behaviour.filter === null) {
          expect((await filter('eq')).status).toBe(400);
          return;
        }
        const eq = await filter('eq');
        expect(eq.status, eq.text).toBe(200);
        expect(eq.json.data.map((r: any) => r.id)).toEqual([ids[0]]);
        const gt = await filter('gt');
        if (behaviour.filter.ordered) {
          expect(gt.status, gt.text).toBe(200);
          expect(gt.json.data.map((r: any) => r.id)).toEqual([ids[1]]);
        } else expect(gt.status).toBe(400);
      });

      it('is published in openapi.json with the schema the server checks', () => {
        const p = manifest.collections.find((c) => c.name === 'Typed')!.properties.find((x) => x.name === name)!;
        expect(doc.components.schemas.Typed.properties[name]).toEqual(propertyJsonSchema(p, { forInput: false }));
        const input = collectionInputSchema(
          manifest.collections.find((c) => c.name === 'Typed')!,
          { mode: 'create' },
        );
        expect(doc.components.schemas.TypedInput.properties[name]).toEqual((input.properties as Record<string, unknown>)[name]);
      });

      // Blobs cannot be grouped (nor filtered): only the other types get a query.
      if (behaviour.filter !== null)
        it('groups by it: the group key is the value as text, typed in the query schema', async () => {
          const r = await call(base, 'GET', `/${queryName(type)}`);
          expect(r.status, r.text).toBe(200);
          const keys = r.json.data.map((row: any) => [row.id, row.n]).sort();
          expect(keys).toEqual(
            [
              [keyText(expected(0)), 1],
              [keyText(expected(1)), 1],
            ].sort(),
          );
          const schema = doc.components.schemas[queryName(type)].properties.value;
          expect(withoutDescription(schema)).toEqual(withoutDescription(behaviour.queryField('Typed')));
        });

      // Lookups and blobs are no function inputs (the generator refuses them, test/generator/validate.test.ts).
      if (behaviour.functionInput !== undefined)
        it('is checked as a function input: valid passes, invalid is 400 naming the field', async () => {
          const q = `q_${name}`;
          const b = `b_${name}`;
          const params = doc.paths['/takes'].get.parameters.find((x: any) => x.name === q);
          expect(params.schema).toEqual(behaviour.functionField);
          expect(doc.components.schemas['takes.Body'].properties[b]).toEqual(behaviour.functionField);
          const ok = await call(base, 'GET', `/takes?${q}=${encodeURIComponent(queryText(examples[type].values[0]))}`);
          expect(ok.status, ok.text).toBe(200);
          if (examples[type].queryInvalid !== undefined) {
            const bad = await call(base, 'GET', `/takes?${q}=${encodeURIComponent(examples[type].queryInvalid)}`);
            expect(bad.status).toBe(400);
            expect(bad.json.details).toEqual([expect.objectContaining({ path: `/query/${q}` })]);
          }
          const okBody = await call(base, 'POST', '/takes', { [b]: examples[type].values[1] });
          expect(okBody.status, okBody.text).toBe(200);
          expect(okBody.json.body).toEqual({ [b]: examples[type].values[1] });
          const badBody = await call(base, 'POST', '/takes', { [b]: examples[type].invalid });
          expect(badBody.status).toBe(400);
          expect(badBody.json.details).toEqual([expect.objectContaining({ path: `/body/${b}` })]);
        });
    });
  });
}

for (const backend of backends()) typeWalk(backend);
