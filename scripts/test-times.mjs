#!/usr/bin/env node
/**
 * Sums what vitest's default reporter printed for each test file (its duration includes the file's
 * set-up hooks: `svc generate`, servers started), so the cost of the suite can be compared between
 * runs and machines. Usage (a quiet machine gives the figure issue 21 asks for):
 *
 *   npm run build && /usr/bin/time -f '%e s wall, %U s user, %S s sys' npx vitest run 2>&1 | tee /tmp/svc-tests.log
 *   node scripts/test-times.mjs /tmp/svc-tests.log [top]
 *
 * Prints the `top` (default 15) slowest files, then the number of files and tests and the sum of the
 * per-file durations in seconds. Reads any number of logs (a suite run in parts).
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const top = /^\d+$/.test(args.at(-1) ?? '') ? Number(args.pop()) : 15;
if (args.length === 0) {
  process.stderr.write('usage: node scripts/test-times.mjs <vitest output> [...] [top]\n');
  process.exit(1);
}
const rows = [];
for (const file of args) {
  const text = readFileSync(file, 'utf8').replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex
  // " ✓  parallel  test/e2e/crud.test.ts (24 tests | 1 failed) 21150ms" (the project name is optional;
  // a line may follow another process's output that did not end its line)
  for (const m of text.matchAll(/ [✓×❯] +(?:[a-z]+ +)?(test\/\S+\.test\.ts) \((\d+) tests?[^)]*\) (\d+)ms$/gm)) {
    rows.push({ file: m[1], tests: Number(m[2]), seconds: Number(m[3]) / 1000 });
  }
}
rows.sort((a, b) => b.seconds - a.seconds);
for (const r of rows.slice(0, top)) console.log(`${r.seconds.toFixed(1).padStart(7)} s ${String(r.tests).padStart(4)} tests  ${r.file}`);
const sum = rows.reduce((s, r) => s + r.seconds, 0);
const tests = rows.reduce((s, r) => s + r.tests, 0);
console.log(`${rows.length} files, ${tests} tests, per-file durations sum to ${sum.toFixed(1)} s`);
