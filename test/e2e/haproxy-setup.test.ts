/**
 * The HAProxy finder of test/support/haproxy.ts (the load-balancer test's set-up, as
 * test-setup.test.ts checks the Chromium finder): a hidden binary is reported with what to install;
 * it is found through PATH and `SVC_TEST_HAPROXY`; a failing apt-get is retried after `apt-get update`;
 * as root, Debian's `haproxy` is installed with the real apt-get (a no-op once installed).
 */
import { describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEBIAN_HAPROXY, findHaproxy } from '../support/haproxy.js';

/** A temp folder holding executable shell scripts; removed by the returned function. */
function scripts(files: Record<string, string>): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-setup-'));
  for (const [name, body] of Object.entries(files)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

describe('findHaproxy', () => {
  it('reports a hidden HAProxy with what to install, and installs nothing when not allowed', () => {
    const empty = scripts({});
    const lines: string[] = [];
    try {
      expect(findHaproxy({ candidates: [join(empty.dir, 'nope')], path: empty.dir, install: false, log: (l) => lines.push(l) })).toBeUndefined();
      expect(lines.join('\n')).toContain('apt-get install -y haproxy');
    } finally {
      empty.remove();
    }
  });

  it('finds it on PATH and through SVC_TEST_HAPROXY', () => {
    const bin = scripts({ haproxy: 'exit 0', 'my-haproxy': 'exit 0' });
    const before = process.env.SVC_TEST_HAPROXY;
    try {
      expect(findHaproxy({ candidates: [], path: bin.dir, install: false })).toBe(join(bin.dir, 'haproxy'));
      process.env.SVC_TEST_HAPROXY = join(bin.dir, 'my-haproxy');
      expect(findHaproxy({ path: '', install: false })).toBe(join(bin.dir, 'my-haproxy'));
    } finally {
      if (before === undefined) delete process.env.SVC_TEST_HAPROXY;
      else process.env.SVC_TEST_HAPROXY = before;
      bin.remove();
    }
  });

  it('runs apt-get install, then apt-get update and install again when the first install fails', () => {
    const calls = join(tmpdir(), `svc-apt-haproxy-calls-${process.pid}`);
    const apt = scripts({ 'apt-get': `echo "$@" >> ${calls}; exit 1` });
    const lines: string[] = [];
    try {
      const found = findHaproxy({
        candidates: [join(apt.dir, 'nope')],
        path: apt.dir,
        install: true,
        aptGet: join(apt.dir, 'apt-get'),
        log: (l) => lines.push(l),
      });
      expect(found).toBeUndefined();
      expect(readFileSync(calls, 'utf8').trim().split('\n')).toEqual(['-o DPkg::Lock::Timeout=300 install -y haproxy', '-o DPkg::Lock::Timeout=300 update']);
      expect(lines.at(-1)).toBe('svc tests: installing HAProxy failed; the load-balancer test will fail');
    } finally {
      apt.remove();
      rmSync(calls, { force: true });
    }
  });

  it("as root with apt-get, installs Debian's haproxy when it is hidden (a no-op once installed)", () => {
    const empty = scripts({});
    const lines: string[] = [];
    try {
      const found = findHaproxy({ candidates: [join(empty.dir, 'nope')], path: empty.dir, aptGet: '/usr/bin/apt-get', log: (l) => lines.push(l) });
      if (process.getuid?.() === 0) {
        expect(found).toBe(DEBIAN_HAPROXY);
        expect(lines[0]).toMatch(/^svc tests: HAProxy is missing; running \/usr\/bin\/apt-get .*install -y haproxy$/);
      } else {
        expect(found).toBeUndefined(); // only root may install packages
      }
    } finally {
      empty.remove();
    }
  }, 330_000);
});
