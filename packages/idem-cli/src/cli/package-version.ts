import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from './cli-error.js';

/** The `name` in the CLI's package.json, which tells it apart from any package.json around it. */
const PACKAGE_NAME = 'idem-cli';

/**
 * Idem's version, read at run time from its package.json: the nearest one named "idem" in the
 * folders above `from` (this module's URL by default), so it holds from src/cli, dist/cli or any
 * other depth an install puts the CLI at. Throws CliError (exit 1) when there is none.
 */
export function packageVersion(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    const found = versionIn(join(dir, 'package.json'));
    if (found !== undefined) return found;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new CliError(`cannot find the package.json of ${PACKAGE_NAME} above ${fileURLToPath(from)}`);
}

/** The version in `path` when it is Idem's package.json; undefined when missing, unreadable or another package's. */
function versionIn(path: string): string | undefined {
  let manifest: { name?: unknown; version?: unknown };
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8')) as typeof manifest;
  } catch {
    return undefined; // none here, or not one that can be Idem's
  }
  return manifest.name === PACKAGE_NAME && typeof manifest.version === 'string'
    ? manifest.version
    : undefined;
}
