// The Node lines beside the one `npm test` ran the whole suite on: for each of Node 22, 24 and 26
// (registry binaries, scripts/node-line.mjs) it runs the library's contract suites (on
// better-sqlite3 and node:sqlite, IDEM_TEST_STORES), the e2e of `idem serve` (HTTP and stdio)
// and the packed install without a native build (test/package/packed-node-lines.test.ts, on that
// line), and prints which versions ran.
//
//   node scripts/test-node-lines.mjs            # 22, 24 and 26
//   node scripts/test-node-lines.mjs 26         # one line
//
// better-sqlite3 is compiled for each line once (cached under the OS temp dir): 12 on Node 22 and
// 24, 13 on Node 26 (13 needs Node 22 or later; the whole suite tests 12 on the Node it runs on).
// While a line runs, node_modules/better-sqlite3 is that build (a symlink); the Node 20 build is put
// back afterwards, also on Ctrl-C, and at the next start if a run was killed.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { existsSync, lstatSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { betterSqlite3For, nodeLine } from './node-line.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MODULE = join(ROOT, 'node_modules', 'better-sqlite3');
const ASIDE = join(ROOT, 'node_modules', '.better-sqlite3-own');

/** better-sqlite3 tested on each line. */
export const BETTER_SQLITE3_ON = { 22: '12.11.1', 24: '12.11.1', 26: '13.2.0' };

/** What runs on every line beside the whole suite's. */
export const LINE_FILES = [
  'test/contract/',
  'test/adapters/open-sqlite.test.ts',
  'test/e2e/http.test.ts',
  'test/e2e/stdio.test.ts',
  'test/package/packed-node-lines.test.ts',
];

function restore() {
  if (!existsSync(ASIDE)) return;
  if (lstatSync(MODULE, { throwIfNoEntry: false })?.isSymbolicLink()) rmSync(MODULE);
  renameSync(ASIDE, MODULE);
}

function swapIn(pkg) {
  restore();
  renameSync(MODULE, ASIDE);
  symlinkSync(pkg, MODULE, 'dir');
}

function versionOf(pkg) {
  return JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).version;
}

const lines = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['22', '24', '26'];
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    restore();
    process.exit(130);
  });
}
restore();
const ran = [
  `${process.version} (this Node: the whole suite in npm test, better-sqlite3 ${versionOf(MODULE)})`,
];
let failed = false;
for (const major of lines) {
  const line = nodeLine(major);
  const bs3 = BETTER_SQLITE3_ON[major];
  process.stdout.write(`\n== Node ${line.version}: better-sqlite3 ${bs3} (compiled once for this line) ==\n`);
  const began = performance.now();
  const pkg = betterSqlite3For(major, bs3);
  swapIn(pkg);
  try {
    const result = spawnSync(
      join(line.bin, 'node'),
      [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...LINE_FILES],
      {
        cwd: ROOT,
        stdio: 'inherit',
        env: {
          ...process.env,
          PATH: `${line.bin}:${process.env.PATH ?? ''}`,
          npm_config_nodedir: line.nodedir,
          IDEM_PACKED_NODE_LINES: String(major),
          // The contract suites on the SQLite engines only: PostgreSQL and the ORMs run on pure-JS
          // drivers, the same on every line, and the whole suite covers them.
          IDEM_TEST_STORES: 'memory,sqlite,node-sqlite',
        },
      },
    );
    const minutes = ((performance.now() - began) / 60_000).toFixed(1);
    const ok = result.status === 0;
    failed ||= !ok;
    ran.push(
      `v${line.version} (${LINE_FILES.length} groups, better-sqlite3 ${bs3}: ${ok ? 'passed' : 'FAILED'}, ${minutes} min)`,
    );
  } finally {
    restore();
  }
}
process.stdout.write(`\nNode lines run:\n${ran.map((entry) => `  ${entry}`).join('\n')}\n`);
process.exit(failed ? 1 : 0);
