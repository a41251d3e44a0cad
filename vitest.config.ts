import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // e2e tests spawn server processes; two cores on CI.
    maxWorkers: 2,
    allowOnly: false,
    projects: [
      {
        extends: true,
        test: {
          name: 'idem',
          include: ['test/**/*.test.ts'],
          exclude: ['test/package/**'],
          sequence: { groupOrder: 0 },
        },
      },
      // The packed-install test compiles better-sqlite3 for a minute or more: it runs after the
      // others, so that the compiler does not slow the tests that spawn servers and wait on them.
      {
        extends: true,
        test: { name: 'package', include: ['test/package/**/*.test.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
