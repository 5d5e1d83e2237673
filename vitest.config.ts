import { defineConfig } from 'vitest/config';

/**
 * Load tests: files that measure latency under load they make themselves (a GET beside bulk writes
 * within 500 ms; a cheap GET's p99 against a heavy list's median). They run after all others, one at a
 * time, so the suite's own parallelism does not skew what they measure.
 */
const ALONE = ['test/e2e/write-limits.test.ts', 'test/e2e/sqlite-load.test.ts'];

export default defineConfig({
  test: {
    // Generous: they cost nothing when things go right, and files share two cores with each other.
    testTimeout: 120_000, // ms: suites start real servers and databases
    hookTimeout: 300_000, // ms: `svc generate` + migrations per backend
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    server: { deps: { external: [/\/dist\//] } },
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: ALONE,
          // Files run side by side: an e2e file spends most of its time waiting on the `svc` processes
          // it spawns, PostgreSQL and timers, so three at a time keep two cores busy (vitest's default
          // on 2 cores is one); more only slows the CPU-bound ones (generate, lint). Every file uses
          // its own temp dirs, databases and free ports. `SVC_TEST_WORKERS=n` overrides.
          maxWorkers: Number(process.env.SVC_TEST_WORKERS) || 3,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
