/**
 * The dependency rules of DESIGN §2 / STYLE §2, read from every import in the repo (TypeScript's
 * `preProcessFile`): the runtime never imports the generator, templates or schemas; the generator
 * imports the runtime type-only through `runtime/index.ts`, or by value from `runtime/contract/index.ts`
 * (the generator↔runtime contract, which imports nothing outside its own folder — no packages, no
 * `node:` modules — so using its values pulls no server code into the generator); the CLI uses public
 * entries only; generated route modules import nothing but the runtime's public entry.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ROOT } from './support/cli.js';

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((f) => {
    const full = join(ROOT, dir, f);
    if (statSync(full).isDirectory()) return sources(join(dir, f));
    return /\.(ts|js)$/.test(f) ? [join(dir, f)] : [];
  });
}

interface Import {
  file: string;
  spec: string;
  target?: string;
  typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const typeOnlySpecs = new Set<string>();
  source.forEachChild((node) => {
    if (ts.isImportDeclaration(node) && node.importClause?.isTypeOnly) typeOnlySpecs.add((node.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isExportDeclaration(node) && node.isTypeOnly && node.moduleSpecifier) typeOnlySpecs.add((node.moduleSpecifier as ts.StringLiteral).text);
  });
  const valueSpecs = new Set<string>();
  source.forEachChild((node) => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) valueSpecs.add((node.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier) valueSpecs.add((node.moduleSpecifier as ts.StringLiteral).text);
  });
  // preProcessFile also finds dynamic import() calls, which are value imports.
  return ts.preProcessFile(text, true, true).importedFiles.map(({ fileName }) => {
    const target = fileName.startsWith('.') ? relative(ROOT, resolve(ROOT, dirname(file), fileName)).replace(/\.js$/, '.ts') : undefined;
    return { file, spec: fileName, target, typeOnly: typeOnlySpecs.has(fileName) && !valueSpecs.has(fileName) };
  });
}

const all = ['runtime', 'generator', 'cli'].flatMap(sources).flatMap(importsOf);
const from = (folder: string) => all.filter((i) => i.file.startsWith(`${folder}/`));
const RUNTIME_PACKAGES =
  /^(node:|express$|pino$|jose$|cookie$|@node-rs\/argon2$|ajv$|ajv-formats$|uuid$|@prisma\/adapter-(better-sqlite3|pg)$|@prisma\/driver-adapter-utils$|@prisma\/schema-engine-wasm|pg$|better-sqlite3$|proper-lockfile$|p-limit$|graphile-worker$|croner$|standardwebhooks$|unpdf$|ws$|ioredis$|nodemailer$|openid-client$|busboy$|sharp$|content-disposition$|cors$|range-parser$|@aws-sdk\/(client-s3|lib-storage)$|@tus\/(server|file-store|s3-store)$|ai$|prom-client$|@opentelemetry\/(api|sdk-trace-node|sdk-trace-base|exporter-trace-otlp-http|resources|semantic-conventions)$|@ai-sdk\/openai-compatible$|@ag-ui\/core$|@modelcontextprotocol\/sdk\/(client\/(index|stdio|streamableHttp)|types|shared\/transport)\.js$)/;

describe('architecture', () => {
  it('runtime imports only runtime files and its own packages', () => {
    const bad = from('runtime').filter((i) => (i.target ? !i.target.startsWith('runtime/') : !RUNTIME_PACKAGES.test(i.spec)));
    expect(bad).toEqual([]);
  });

  it('runtime/contract imports only its own files (no packages, no node: modules)', () => {
    expect(from('runtime/contract').length).toBeGreaterThan(0);
    const bad = from('runtime/contract').filter((i) => !i.target?.startsWith('runtime/contract/'));
    expect(bad).toEqual([]);
  });

  it('generator imports runtime type-only through runtime/index.ts, or by value from runtime/contract/index.ts', () => {
    const allowed = (i: Import) => i.target === 'runtime/contract/index.ts' || (i.typeOnly && i.target === 'runtime/index.ts');
    const bad = from('generator').filter((i) => i.target?.startsWith('runtime/') && !allowed(i));
    expect(bad).toEqual([]);
    expect(from('generator').filter((i) => i.target?.startsWith('cli/'))).toEqual([]);
  });

  it('cli imports only its own files and the public entries of generator and runtime', () => {
    const bad = from('cli').filter((i) => i.target && !i.target.startsWith('cli/') && !['generator/index.ts', 'runtime/index.ts'].includes(i.target));
    expect(bad).toEqual([]);
  });

  it('compiled function code imports only modules compiled beside it', () => {
    const golden = sources('test/golden').filter((f) => f.includes('/functions/'));
    expect(golden.length).toBeGreaterThan(0);
    for (const file of golden) {
      for (const i of importsOf(file)) expect(i.target, `${file} imports ${i.spec}`).toMatch(/^test\/golden\/[^/]+\/functions\//);
    }
  });

  it('console/ imports only its own files and its browser packages (it talks to the server over HTTP, DESIGN §9)', () => {
    const files = readdirSync(join(ROOT, 'console'), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|tsx)$/.test(f))
      .map((f) => join('console', f));
    expect(files.length).toBeGreaterThan(5);
    const imports = files.flatMap(importsOf);
    const bad = imports.filter((i) =>
      i.target
        ? !i.target.startsWith('console/')
        : !/^(preact|preact\/hooks|@tanstack\/virtual-core|uplot|uplot\/dist\/uPlot\.min\.css|vite|node:url)$/.test(i.spec),
    );
    expect(bad).toEqual([]);
  });
});
