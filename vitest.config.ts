import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000, // ms: suites start real servers and databases
    hookTimeout: 180_000, // ms: `svc generate` + migrations per backend
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Files run side by side: most of a file's time is spent waiting on the `svc` processes it spawns,
    // PostgreSQL and timers, so four at a time keep two cores busy (vitest's default on 2 cores is one).
    // Every file uses its own temp dirs, databases and free ports. `VITEST_MAX_WORKERS=n` overrides.
    maxWorkers: 4,
  },
});
