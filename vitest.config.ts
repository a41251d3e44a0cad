import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // e2e tests spawn server processes; two cores on CI.
    maxWorkers: 2,
    allowOnly: false,
  },
});
