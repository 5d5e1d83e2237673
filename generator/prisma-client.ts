/**
 * @module Links the packages generated code imports (`svc`, and `@prisma/client` with the client) into
 * `.svc/node_modules/`, so an app folder anywhere on disk runs; and, only when asked (`svc generate
 * --prisma-client` or svc.json `generate.prismaClient`), generates the Prisma client for
 * `.svc/schema.prisma` into `.svc/client/`, compiled to JavaScript. The runtime does not load that
 * client (it speaks SQL through the driver adapters); it is for app code that wants Prisma itself.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync, lstatSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ts } from './typescript.js';

const require = createRequire(import.meta.url);
const run = promisify(execFile);
/** The package root (holds package.json), from `dist/generator/` or `generator/`. */
const PACKAGE_ROOT = resolve(
  dirname(fileURLToPath(import.meta.url)),
  existsSync(join(dirname(fileURLToPath(import.meta.url)), '../../package.json')) ? '../..' : '..',
);

function transpileTree(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) {
      transpileTree(full);
    } else if (full.endsWith('.ts')) {
      const out = ts.transpileModule(readFileSync(full, 'utf8'), {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
        fileName: entry,
      });
      writeFileSync(full.replace(/\.ts$/, '.js'), out.outputText);
      unlinkSync(full);
    }
  }
}

function link(target: string, at: string): void {
  mkdirSync(dirname(at), { recursive: true });
  try {
    if (lstatSync(at).isSymbolicLink() && readlinkSync(at) === target) return;
    rmSync(at, { recursive: true, force: true });
  } catch {
    /* absent */
  }
  symlinkSync(target, at, 'dir');
}

/**
 * Links `.svc/node_modules/svc` to this package; with `prismaClient`, also generates the client (see
 * `generatePrismaClient`), and without it removes a client an earlier run left, so `.svc/` holds the
 * client exactly when it was asked for.
 * @throws Error with Prisma's message when generation fails
 */
export async function emitPackages(svcDir: string, prismaClient: boolean): Promise<void> {
  link(PACKAGE_ROOT, join(svcDir, 'node_modules', 'svc'));
  if (prismaClient) return generatePrismaClient(svcDir);
  rmSync(join(svcDir, 'client'), { recursive: true, force: true });
  rmSync(join(svcDir, 'node_modules', '@prisma'), { recursive: true, force: true });
}

/**
 * Runs `prisma generate` for `<svcDir>/schema.prisma` and compiles the output to ESM JavaScript.
 * The Prisma CLI wants a schema-engine binary path it never runs during generate (DESIGN §5 fact 1):
 * we point it at an existing file.
 * @throws Error with Prisma's message when generation fails
 */
async function generatePrismaClient(svcDir: string): Promise<void> {
  const prismaCli = require.resolve('prisma/build/index.js');
  rmSync(join(svcDir, 'client'), { recursive: true, force: true });
  try {
    await run(process.execPath, [prismaCli, 'generate', '--schema', join(svcDir, 'schema.prisma')], {
      cwd: svcDir,
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
    });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`prisma generate failed: ${(e.stderr || e.stdout || e.message).trim()}`);
  }
  transpileTree(join(svcDir, 'client'));
  link(dirname(require.resolve('@prisma/client/package.json')), join(svcDir, 'node_modules', '@prisma', 'client'));
}
