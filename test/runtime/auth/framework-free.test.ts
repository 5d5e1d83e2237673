/**
 * The authentication core is framework-free (README "How it is built"): no module of runtime/auth/
 * imports an HTTP framework, so WebSocket upgrades, agent sessions and in-process clients can call
 * `authenticateCredentials` and `verifyToken` without an Express request.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../support/cli.js';

describe('runtime/auth', () => {
  it('imports no HTTP framework', () => {
    const dir = join(ROOT, 'runtime/auth');
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files).toContain('authenticate.ts');
    const bad = files.flatMap((f) =>
      ts
        .preProcessFile(readFileSync(join(dir, f), 'utf8'), true, true)
        .importedFiles.map((i) => i.fileName)
        .filter((spec) => /^(express|body-parser|ws|node:http|node:https|\.\.\/http\/)/.test(spec))
        .map((spec) => `${f} imports ${spec}`),
    );
    expect(bad).toEqual([]);
  });
});
