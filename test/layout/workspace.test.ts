import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function json(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${ROOT}${path}`, 'utf8')) as Record<string, unknown>;
}

/** Each "exports" entry of packages/idem as a specifier and the source file its types are built from. */
function librarySources(): Record<string, string> {
  const exports = json('packages/idem/package.json').exports as Record<string, { types: string }>;
  return Object.fromEntries(
    Object.entries(exports).map(([subpath, target]) => [
      subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`,
      target.types.replace(/^\.\/dist\/(.+)\.d\.ts$/, './packages/idem/src/$1.ts'),
    ]),
  );
}

describe('the workspace', () => {
  it('tsconfig.json maps exactly the library’s entries to their sources', () => {
    const { config } = ts.readConfigFile(`${ROOT}tsconfig.json`, ts.sys.readFile) as {
      config: { compilerOptions: { paths: Record<string, string[]> } };
    };
    const paths = Object.fromEntries(
      Object.entries(config.compilerOptions.paths).map(([name, [target]]) => [name, target]),
    );
    expect(paths).toEqual(librarySources());
  });

  it('the packages’ builds resolve idem as a user does (no paths to sources)', () => {
    for (const pkg of ['idem', 'idem-cli']) {
      const { config } = ts.readConfigFile(`${ROOT}packages/${pkg}/tsconfig.build.json`, ts.sys.readFile) as {
        config: { compilerOptions: { paths?: Record<string, string[]> } };
      };
      expect(config.compilerOptions.paths, pkg).toEqual({});
    }
  });

  it('the applications depend on the library at its own version; the library on none of theirs', () => {
    const library = json('packages/idem/package.json') as {
      version: string;
      dependencies: Record<string, string>;
    };
    const applications = json('packages/idem-cli/package.json') as {
      dependencies: Record<string, string>;
      bin: Record<string, string>;
    };
    expect(applications.dependencies.idem).toBe(library.version);
    expect(applications.bin).toEqual({ idem: 'dist/cli/main.js' });
    expect(Object.keys(library.dependencies).sort()).toEqual(['canonicalize', 'jose', 'zod']);
  });
});
