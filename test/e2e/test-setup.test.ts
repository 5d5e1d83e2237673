/**
 * The test run's own set-up (README "Run the tests"): the Chromium finder of test/support/chromium.ts
 * with the browser hidden (no candidate, an empty PATH), found through PATH or `SVC_TEST_CHROMIUM`,
 * and installed with apt-get (the real one as root: idempotent once installed; a failing one to check
 * the `apt-get update` retry). The embedded PostgreSQL fallback is proven by running any PostgreSQL
 * suite with `SVC_TEST_PG_URL` pointing at a closed port (README).
 */
import { describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEBIAN_CHROMIUM, findChromium } from '../support/chromium.js';

/** A temp folder holding executable shell scripts; removed by the returned function. */
function scripts(files: Record<string, string>): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-setup-'));
  for (const [name, body] of Object.entries(files)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

describe('findChromium', () => {
  it('reports a hidden browser with what to install, and installs nothing when not allowed', () => {
    const empty = scripts({});
    const lines: string[] = [];
    try {
      expect(findChromium({ candidates: [join(empty.dir, 'nope')], path: empty.dir, install: false, log: (l) => lines.push(l) })).toBeUndefined();
      expect(lines.join('\n')).toContain('apt-get install -y chromium');
    } finally {
      empty.remove();
    }
  });

  it('finds the browser on PATH and through SVC_TEST_CHROMIUM', () => {
    const bin = scripts({ chromium: 'exit 0', 'my-browser': 'exit 0' });
    try {
      expect(findChromium({ candidates: [], path: bin.dir, install: false })).toBe(join(bin.dir, 'chromium'));
      const before = process.env.SVC_TEST_CHROMIUM;
      process.env.SVC_TEST_CHROMIUM = join(bin.dir, 'my-browser');
      try {
        expect(findChromium({ path: '', install: false })).toBe(join(bin.dir, 'my-browser'));
      } finally {
        if (before === undefined) delete process.env.SVC_TEST_CHROMIUM;
        else process.env.SVC_TEST_CHROMIUM = before;
      }
    } finally {
      bin.remove();
    }
  });

  it('runs apt-get install, then apt-get update and install again when the first install fails', () => {
    const calls = join(tmpdir(), `svc-apt-calls-${process.pid}`);
    const apt = scripts({ 'apt-get': `echo "$@" >> ${calls}; exit 1` });
    const lines: string[] = [];
    try {
      const found = findChromium({
        candidates: [join(apt.dir, 'nope')],
        path: apt.dir,
        install: true,
        aptGet: join(apt.dir, 'apt-get'),
        log: (l) => lines.push(l),
      });
      expect(found).toBeUndefined();
      const args = readFileSync(calls, 'utf8').trim().split('\n');
      expect(args).toEqual(['-o DPkg::Lock::Timeout=300 install -y chromium', '-o DPkg::Lock::Timeout=300 update']);
      expect(lines.at(-1)).toBe('svc tests: installing Chromium failed; the login-page test will fail');
    } finally {
      apt.remove();
      rmSync(calls, { force: true });
    }
  });

  it("as root with apt-get, installs Debian's chromium when it is hidden (a no-op once installed)", () => {
    const empty = scripts({});
    const lines: string[] = [];
    try {
      const asRoot = process.getuid?.() === 0;
      const found = findChromium({ candidates: [join(empty.dir, 'nope')], path: empty.dir, aptGet: '/usr/bin/apt-get', log: (l) => lines.push(l) });
      if (asRoot) {
        expect(found).toBe(DEBIAN_CHROMIUM);
        expect(lines[0]).toMatch(/^svc tests: Chromium is missing; running \/usr\/bin\/apt-get .*install -y chromium$/);
      } else {
        expect(found).toBeUndefined(); // only root may install packages
      }
    } finally {
      empty.remove();
    }
  }, 330_000);
});
