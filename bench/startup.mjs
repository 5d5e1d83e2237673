/**
 * Start-up benchmark (issue 21 §3): how long `svc generate` and `svc serve` make a developer wait on
 * the example shop (SQLite), against a yardstick measured in the same run.
 *
 * - generate, cold: `svc generate` on a copy without `.svc/` (its migrations folder kept, as in a
 *   checkout), each run on a fresh copy;
 * - generate, nothing changed: `svc generate` again on a generated copy;
 * - serve ready: from spawning `svc serve` to the first 200 of `GET /api/_ready` (polled every 5 ms),
 *   and the server's CPU time (user + system, from /proc) at that moment;
 * - yardstick: a bare `node:http` server that answers its first request (spawn → first 200): what any
 *   Node server pays before its own work. Reported as the ratio svc ÷ yardstick, pair by pair.
 *
 * Usage: `node bench/startup.mjs [runs]` (default 11; `npm run build` first). Prints a table
 * (median, p95 in ms). Linux only for the CPU column.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/cli/index.js');
const SHOP = join(ROOT, 'examples/shop');
const RUNS = Number(process.argv[2] ?? 11);

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** A copy of the shop without generated output or data. */
function shopCopy() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-start-'));
  cpSync(SHOP, dir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
  return dir;
}

function timeGenerate(dir) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [CLI, 'generate', dir], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: `file:${join(dir, 'data/app.db')}` },
  });
  if (r.status !== 0) throw new Error(`svc generate failed: ${r.stderr}`);
  return performance.now() - t0;
}

/** Resolves with the status of `GET url`, or 0 when nothing answers yet. */
const probe = (url) =>
  new Promise((ok) => {
    const req = request(url, (res) => {
      res.resume();
      ok(res.statusCode ?? 0);
    });
    req.on('error', () => ok(0));
    req.end();
  });

const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** Spawns `args`, reads the port it prints, polls `path` until 200; returns wall and CPU ms at that point. */
async function timeReady(args, env, path) {
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((done) => child.on('close', done));
  try {
    const port = await new Promise((ok, fail) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = /127\.0\.0\.1:(\d+)/.exec(out);
        if (m) ok(Number(m[1]));
      });
      exited.then((code) => fail(new Error(`${args.join(' ')} exited (${code}) before it printed its address: ${out}`)));
    });
    while ((await probe(`http://127.0.0.1:${port}${path}`)) !== 200) await new Promise((r) => setTimeout(r, 5));
    return { wall: performance.now() - t0, cpu: cpuMs(child.pid) };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const YARDSTICK = `const s = require('node:http').createServer((q, r) => r.end('ok')).listen(0, '127.0.0.1', () => console.log('at http://127.0.0.1:' + s.address().port));`;

async function main() {
  if (!existsSync(CLI)) throw new Error('run npm run build first');
  const cold = [];
  const again = [];
  const ready = [];
  const readyCpu = [];
  const yard = [];
  const ratio = [];
  const served = shopCopy();
  const env = { DATABASE_URL: `file:${join(served, 'data/app.db')}`, SVC_LOG_LEVEL: 'warn' };
  timeGenerate(served);
  spawnSync(process.execPath, [CLI, 'migrate', served], { env: { ...process.env, ...env } });
  try {
    for (let i = 0; i < RUNS; i++) {
      const dir = shopCopy();
      try {
        cold.push(timeGenerate(dir));
        again.push(timeGenerate(dir));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const y = await timeReady(['-e', YARDSTICK], {}, '/');
      const s = await timeReady([CLI, 'serve', served, '--port', '0'], env, '/api/_ready');
      yard.push(y.wall);
      ready.push(s.wall);
      readyCpu.push(s.cpu);
      ratio.push(s.wall / y.wall);
    }
  } finally {
    rmSync(served, { recursive: true, force: true });
  }
  const row = (name, values, digits = 0) => `| ${name} | ${quantile(values, 0.5).toFixed(digits)} | ${quantile(values, 0.95).toFixed(digits)} |`;
  console.log(`start-up on examples/shop (SQLite), ${RUNS} runs\n`);
  console.log('| figure | median | p95 |\n|---|---:|---:|');
  console.log(row('svc generate, cold (ms)', cold));
  console.log(row('svc generate, nothing changed (ms)', again));
  console.log(row('svc serve → first 200 of /api/_ready (ms)', ready));
  console.log(row('svc serve CPU until then (ms)', readyCpu));
  console.log(row('yardstick node:http → first 200 (ms)', yard));
  console.log(row('svc serve ÷ yardstick', ratio, 2));
}

main().catch((err) => {
  console.error(`bench: ${err.message}`);
  process.exit(1);
});
