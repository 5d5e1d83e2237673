/**
 * Golden files of the generated output of examples/shop (STYLE §7, §9.2): `buildFiles` compared
 * file by file with `test/golden/<flavour>/`, the set of file names as its own snapshot, and the
 * golden OpenAPI document validated with a real OpenAPI validator, the golden client.ts compiled by
 * tsc against openapi-typescript's reading of it. Regenerate with `vitest -u`.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { buildFiles } from '../../dist/generator/build-files.js';
import { loadAndValidate } from '../../dist/generator/validate/index.js';
import { compileClient } from '../support/client-check.js';
import { ROOT } from '../support/cli.js';

const SHOP = join(ROOT, 'examples/shop');
const FLAVOURS = [
  ['shop', {}],
  ['shop-postgresql', { DATABASE_URL: 'postgresql://golden@localhost/shop' }],
] as const;

describe.each(FLAVOURS)('golden output of %s', (flavour, env) => {
  it('matches file by file', async () => {
    const { manifest, functionFiles } = await loadAndValidate(SHOP, env);
    const files = buildFiles(manifest, functionFiles);
    await expect(`${Object.keys(files).join('\n')}\n`).toMatchFileSnapshot(join(ROOT, 'test/golden', flavour, 'FILES.txt'));
    for (const [path, content] of Object.entries(files)) {
      await expect(content).toMatchFileSnapshot(join(ROOT, 'test/golden', flavour, path));
    }
  });

  it('is byte-identical on every run and carries no machine paths or times', async () => {
    const build = async () => {
      const { manifest, functionFiles } = await loadAndValidate(SHOP, env);
      return buildFiles(manifest, functionFiles);
    };
    const a = await build();
    const b = await build();
    expect(Object.keys(a)).toContain('functions/lib/money.js');
    expect(b).toEqual(a);
    const all = Object.values(a).join('\n');
    expect(all).not.toContain(ROOT);
    expect(all).not.toMatch(/20\d\d-\d\d-\d\dT\d\d:/);
    expect(all).not.toContain('\r');
    for (const content of Object.values(a)) expect(content.endsWith('\n')).toBe(true);
  });

  it('describes every collection operation in a valid OpenAPI 3.1 document', async () => {
    const { manifest } = await loadAndValidate(SHOP, env);
    const doc = JSON.parse(buildFiles(manifest)['openapi.json']);
    await SwaggerParser.validate(structuredClone(doc));
    const ops = Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>).flatMap((item) =>
      Object.values(item)
        .map((op) => op.operationId)
        .filter(Boolean),
    );
    for (const c of manifest.collections) {
      for (const verb of ['list', 'create', 'deleteMany', 'get', 'replace', 'update', 'delete']) expect(ops).toContain(`${verb}${c.name}`);
      expect(doc.components.schemas[c.name].properties).toHaveProperty('createdAt');
    }
    expect(new Set(ops).size).toBe(ops.length);
  });

  it('has a client.ts that compiles and agrees with openapi-typescript', async () => {
    const { manifest } = await loadAndValidate(SHOP, env);
    const files = buildFiles(manifest);
    const result = await compileClient(files['client.ts'], JSON.parse(files['openapi.json']));
    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  });
});
