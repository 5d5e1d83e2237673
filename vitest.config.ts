import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000, // ms: suites start real servers and databases
    hookTimeout: 180_000, // ms: `svc generate` + migrations per backend
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
  },
});
