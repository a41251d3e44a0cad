import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CliError } from '../../packages/idem-cli/src/cli/cli-error.js';
import { packageVersion } from '../../packages/idem-cli/src/cli/package-version.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

afterAll(cleanup);

/** A file URL for `parts` under `root`, whose folders exist (the file itself need not). */
function moduleUrl(root: string, ...parts: string[]): string {
  mkdirSync(join(root, ...parts.slice(0, -1)), { recursive: true });
  return pathToFileURL(join(root, ...parts)).href;
}

describe('packageVersion: the version in the nearest package.json named idem-cli above the module', () => {
  it('from dist/cli, from src/cli, and from deeper, past package.json files of other packages', () => {
    const root = makeTempDir('idem-version-');
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'idem-cli', version: '7.8.9' }));
    // A nested manifest without Idem's name (such as {"type": "module"}) is not Idem's.
    mkdirSync(join(root, 'dist'));
    writeFileSync(join(root, 'dist', 'package.json'), JSON.stringify({ type: 'module' }));
    expect(packageVersion(moduleUrl(root, 'dist', 'cli', 'main.js'))).toBe('7.8.9');
    expect(packageVersion(moduleUrl(root, 'src', 'cli', 'package-version.ts'))).toBe('7.8.9');
    expect(packageVersion(moduleUrl(root, 'dist', 'esm', 'cli', 'main.js'))).toBe('7.8.9');
  });

  it('an unreadable package.json on the way is passed over', () => {
    const root = makeTempDir('idem-version-');
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'idem-cli', version: '1.2.3' }));
    mkdirSync(join(root, 'dist'));
    writeFileSync(join(root, 'dist', 'package.json'), '{not json');
    expect(packageVersion(moduleUrl(root, 'dist', 'cli', 'main.js'))).toBe('1.2.3');
  });

  it('throws CliError (exit 1) when no package.json named idem-cli is above it', () => {
    const root = makeTempDir('idem-version-');
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'other', version: '1.0.0' }));
    let thrown: unknown;
    try {
      packageVersion(moduleUrl(root, 'dist', 'cli', 'main.js'));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CliError);
    expect((thrown as CliError).exitCode).toBe(1);
    expect((thrown as CliError).message).toMatch(/^cannot find the package\.json of idem-cli above /);
  });
});
