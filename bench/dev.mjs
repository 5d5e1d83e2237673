/**
 * @module The edit loop's figures (issue 21 §2, DESIGN §10): runs `svc dev` (the built `dist/`) on a copy
 * of examples/shop (SQLite) and makes `BENCH_EDITS` edits of each kind, one at a time, each timed from
 * the moment the file is saved (`writeFileSync` returned) until the new version answers from outside:
 * - property: a string property added to `collections/Product.json` → `GET /api/Product?select=<it>`
 *   answers 200 (the column exists and the API serves it) and it is in `/api/_openapi` (the same version);
 * - function: `functions/benchEcho.ts` edited → `GET /api/benchEcho` answers the new value.
 * Prints p50, p95 and max per kind (and the goals: ≤ 1500 ms and ≤ 500 ms), and the JSON of the run.
 * Not a test: the figures depend on the machine. `BENCH_EDITS` (default 20).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const EDITS = Number(process.env.BENCH_EDITS ?? 20);
const POLL_MS = 10;
const TIMEOUT_MS = 60_000;

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-dev-'));
cpSync(join(ROOT, 'examples/shop'), dir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
writeFileSync(
  join(dir, 'functions/benchEcho.json'),
  JSON.stringify({ name: 'benchEcho', functionTypeId: 1, endpoint: '/benchEcho', access: { GET: ['_ANONYMOUS_USER'] } }),
);
const echo = (n) => `export default async () => ({ n: ${n} });\n`;
writeFileSync(join(dir, 'functions/benchEcho.ts'), echo(0));

const child = spawn(process.execPath, [join(ROOT, 'dist/cli/index.js'), 'dev', dir, '--port', '0'], {
  env: { ...process.env, SVC_LOG_LEVEL: 'error', DATABASE_URL: '' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let out = '';
child.stdout.on('data', (d) => (out += d));
child.stderr.on('data', (d) => (out += d));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(probe, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not served within ${TIMEOUT_MS} ms:\n${out}`);
    await sleep(POLL_MS);
  }
}

const percentile = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};
const summary = (xs) => ({ p50: Math.round(percentile(xs, 50)), p95: Math.round(percentile(xs, 95)), max: Math.round(Math.max(...xs)), n: xs.length });

try {
  const started = performance.now();
  await until(async () => /serving \S+ at (http:\/\/\S+)/.test(out), 'svc dev');
  const base = /serving \S+ at (http:\/\/\S+)/.exec(out)[1];
  const startMs = Math.round(performance.now() - started);

  const productFile = join(dir, 'collections/Product.json');
  const product = JSON.parse(readFileSync(productFile, 'utf8'));
  const property = [];
  for (let i = 0; i < EDITS; i++) {
    const name = `bench${i}`;
    product.properties[name] = { type: 'string', description: `added by bench/dev.mjs (${i})` };
    writeFileSync(productFile, `${JSON.stringify(product, null, 2)}\n`);
    const saved = performance.now();
    // The API first (a small answer, polled often), then the OpenAPI document (large: read once it is due).
    await until(async () => (await fetch(`${base}/Product?select=${name}&pageSize=1`)).status === 200, `property ${name}`);
    await until(async () => Boolean((await (await fetch(`${base}/_openapi`)).json()).components.schemas.Product.properties[name]), `${name} in OpenAPI`);
    property.push(performance.now() - saved);
  }

  const fnFile = join(dir, 'functions/benchEcho.ts');
  const fn = [];
  for (let i = 1; i <= EDITS; i++) {
    writeFileSync(fnFile, echo(i));
    const saved = performance.now();
    await until(async () => (await (await fetch(`${base}/benchEcho`)).json()).n === i, `function edit ${i}`);
    fn.push(performance.now() - saved);
  }

  const result = { startMs, property: summary(property), function: summary(fn), goals: { propertyMs: 1500, functionMs: 500 } };
  process.stdout.write(
    [
      `svc dev on examples/shop (SQLite), ${EDITS} edits of each kind, from file saved to served:`,
      `  property added → OpenAPI + API   p50 ${result.property.p50} ms   p95 ${result.property.p95} ms   max ${result.property.max} ms   (goal ≤ 1500 ms)`,
      `  function edited → new answer     p50 ${result.function.p50} ms   p95 ${result.function.p95} ms   max ${result.function.max} ms   (goal ≤ 500 ms)`,
      `  (svc dev ready ${startMs} ms after start, generate included)`,
      JSON.stringify(result),
      '',
    ].join('\n'),
  );
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('close', r));
  rmSync(dir, { recursive: true, force: true });
}
