import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * `idem` and `idem/<entry>` resolve, in tests, to the library's sources (as tsconfig.json's paths
 * do for the type check): a test that imports a module by its path and an application module that
 * imports it by the package's name then share one copy of each class. Processes the tests spawn run
 * the built packages, as a user does.
 */
function librarySources(): { find: RegExp; replacement: string }[] {
  const dir = new URL('./packages/idem/', import.meta.url);
  const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as {
    exports: Record<string, { types: string }>;
  };
  return Object.entries(pkg.exports).map(([subpath, target]) => {
    const source = target.types.replace(/^\.\/dist\/(.+)\.d\.ts$/, './src/$1.ts');
    const name = subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`;
    return { find: new RegExp(`^${name}$`), replacement: fileURLToPath(new URL(source, dir)) };
  });
}

export default defineConfig({
  resolve: { alias: librarySources() },
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
      // The packed-install tests (test/package/) install tarballs, and packed-cli compiles
      // better-sqlite3 for a minute or more: they run after the others, so that the compiler does
      // not slow the tests that spawn servers and wait on them.
      {
        extends: true,
        test: { name: 'package', include: ['test/package/**/*.test.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
