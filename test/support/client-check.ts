/**
 * @module Compiles a generated `client.ts` with the real TypeScript compiler (`tsc --noEmit`) next to
 * what openapi-typescript makes of the same `openapi.json`, and a consumer file that holds the two to
 * mutual assignability (every component schema, every function's query, body and response) and uses
 * the client. Used by the client tests and the golden tests. openapi-typescript runs with
 * `emptyObjectsUnknown` (an opaque `{ type: object }` is any object, not an empty one) and without
 * `defaultNonNullable` (a property with a `default` may still be left out of a request).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { ROOT } from './cli.js';

type Operation = {
  operationId?: string;
  'x-svc-resource'?: string;
  parameters?: { in: string }[];
  requestBody?: unknown;
  responses: Record<string, { content?: unknown }>;
};
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

/** The checks of the consumer file: one `check<Same<ours, theirs>>()` per schema and function operation. */
export function agreementChecks(doc: Doc): string {
  const q = JSON.stringify;
  const lines = ['check<Same<keyof Schemas, keyof components["schemas"]>>();'];
  for (const name of Object.keys(doc.components.schemas)) {
    lines.push(`check<Same<Schemas[${q(name)}], components["schemas"][${q(name)}]>>();`);
    lines.push(`check<Same<KeysOf<Schemas[${q(name)}]>, KeysOf<components["schemas"][${q(name)}]>>>();`);
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op.operationId?.startsWith('call_')) continue; // a function's primary address
      const ours = `Functions[${q(op['x-svc-resource'])}][${q(method.toUpperCase())}]`;
      const theirs = `paths[${q(path)}][${q(method)}]`;
      if (op.parameters?.some((p) => p.in === 'query')) lines.push(`check<Same<${ours}["query"], NonNullable<${theirs}["parameters"]["query"]>>>();`);
      if (op.requestBody) lines.push(`check<Same<${ours}["body"], NonNullable<${theirs}["requestBody"]>["content"]["application/json"]>>();`);
      if (op.responses['200']?.content) lines.push(`check<Same<${ours}["response"], ${theirs}["responses"][200]["content"]["application/json"]>>();`);
    }
  }
  return lines.join('\n');
}

const PRELUDE = `import type { components, paths } from './openapi';
import type { Functions, Schemas } from './client';
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type KeysOf<T> = T extends object ? keyof T : never;
declare function check<T extends true>(): void;
`;

/**
 * Writes client.ts, openapi.d.ts (openapi-typescript) and consumer.ts (the agreement checks plus
 * `usage`, extra consumer code) to a temp dir and runs `tsc --noEmit` there (strict, ES2022 lib only,
 * no ambient types: the client must be self-contained).
 * @returns tsc's exit code and output
 */
export async function compileClient(clientTs: string, openapi: object, usage = ''): Promise<{ code: number | null; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-client-'));
  try {
    const theirs = astToString(await openapiTS(structuredClone(openapi) as never, { emptyObjectsUnknown: true, defaultNonNullable: false }));
    writeFileSync(join(dir, 'client.ts'), clientTs);
    writeFileSync(join(dir, 'openapi.d.ts'), theirs);
    writeFileSync(join(dir, 'consumer.ts'), `${PRELUDE}${agreementChecks(openapi as Doc)}\n${usage}\n`);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          lib: ['ES2022'],
          types: [],
          module: 'ESNext',
          moduleResolution: 'Bundler',
          skipLibCheck: false,
          noUnusedLocals: false,
        },
        files: ['client.ts', 'openapi.d.ts', 'consumer.ts'],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
    return { code: tsc.status, output: `${tsc.stdout}${tsc.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
