import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildExamples, startExample } from '../helpers/example-fixtures.js';
import {
  REPO_ROOT,
  cleanEnv,
  cleanup,
  freePort,
  makeTempDir,
  startServerProcess,
  track,
} from '../helpers/mcp-fixtures.js';

// The official MCP conformance suite at the 2026-07-28 revision (scripts/conformance.mjs installs
// 0.2.0-alpha.12 with a Node 22 binary from the npm registry, once per machine):
// - the frozen requirement set against examples/conformance-fixture.ts (a server built with Idem
//   on the SDK's createMcpHandler), every failure in the reasoned baseline
//   test/conformance/expected-failures.2026-07-28.yaml;
// - the door scenarios against `idem serve` and `idem proxy`, each check compared with the same
//   check against a plain createMcpHandler server with one Idem tool (the fixture, minimal): no
//   door fails a check that server passes, and tools-list, http-header-validation and
//   dns-rebinding-protection pass whole.

beforeAll(() => buildExamples(), 600_000);
afterAll(cleanup);

interface SuiteRun {
  code: number | null;
  output: string;
  /** check id -> status, per scenario. */
  checks: Map<string, Map<string, string>>;
}

function runSuite(args: string[]): Promise<SuiteRun> {
  return new Promise((resolve) => {
    const proc = track(
      spawn(process.execPath, [join(REPO_ROOT, 'scripts', 'conformance.mjs'), ...args], {
        cwd: REPO_ROOT,
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let output = '';
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    proc.once('exit', (code) => {
      const checks = new Map<string, Map<string, string>>();
      let current: Map<string, string> | undefined;
      for (const line of output.split('\n')) {
        const scenario = /^([a-z0-9-]+): (ok|FAILED)$/.exec(line);
        if (scenario) checks.set(scenario[1] as string, (current = new Map()));
        const check = /^ {2}([^:\s]+): (SUCCESS|FAILURE|WARNING)$/.exec(line);
        if (check && current) current.set(check[1] as string, check[2] as string);
      }
      resolve({ code, output, checks });
    });
  });
}

async function startFixture(env: Record<string, string> = {}): Promise<string> {
  const port = await freePort();
  const fixture = startExample('conformance-fixture', {
    IDEM_PORT: String(port),
    IDEM_DB: join(makeTempDir(), 'fixture.sqlite'),
    ...env,
  });
  const deadline = Date.now() + 20_000;
  while (!fixture.stderr().includes('idem.serving')) {
    if (Date.now() > deadline) throw new Error(`fixture did not start: ${fixture.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return `http://127.0.0.1:${port}/mcp`;
}

function skipWhenNotInstalled(run: SuiteRun, skip: () => void): void {
  if (run.code === 3 && !process.env.CI) {
    console.warn(`skipped: ${run.output.trim()}`);
    skip();
  }
}

const WHOLE = ['tools-list', 'http-header-validation', 'dns-rebinding-protection'];

describe('MCP conformance suite, 2026-07-28', () => {
  it(
    'the requirement set against the fixture built with Idem: every failure is in the baseline',
    { timeout: 600_000 },
    async (ctx) => {
      const url = await startFixture();
      const run = await runSuite(['--requirements', '2026-07-28', url]);
      skipWhenNotInstalled(run, () => ctx.skip());
      expect(run.output).toContain('requirements 2026-07-28: ok');
      expect(run.output).toContain('✓ tools-call-simple-text');
      expect(run.output).toContain('✓ server-stateless');
      expect(run.code, run.output).toBe(0);
    },
  );

  it(
    'idem serve and idem proxy pass every check a plain createMcpHandler server with one Idem tool passes',
    { timeout: 900_000 },
    async (ctx) => {
      const plain = await runSuite([
        '--revision',
        '2026-07-28',
        await startFixture({ IDEM_FIXTURE: 'minimal' }),
      ]);
      skipWhenNotInstalled(plain, () => ctx.skip());
      // Five scenarios, each with its checks read (the comparison below is over them).
      expect(plain.checks.size, plain.output).toBe(5);
      for (const checks of plain.checks.values()) expect(checks.size).toBeGreaterThan(1);
      const serve = await startServerProcess({ args: ['--db', join(makeTempDir(), 'serve.sqlite')] });
      const upstream = await startFixture();
      const proxy = await startServerProcess({
        command: 'proxy',
        args: ['--db', join(makeTempDir(), 'proxy.sqlite'), '--upstream', upstream],
        readyTimeoutMs: 30_000,
      });
      for (const door of [serve.url, proxy.url]) {
        const run = await runSuite(['--revision', '2026-07-28', door]);
        for (const [scenario, checks] of plain.checks) {
          const got = run.checks.get(scenario);
          expect(got, `${door} ${scenario}\n${run.output}`).toBeDefined();
          for (const [check, status] of checks) {
            if (status === 'SUCCESS')
              expect(`${scenario} ${check}: ${got?.get(check)}`).toBe(`${scenario} ${check}: SUCCESS`);
          }
        }
        for (const scenario of WHOLE) expect(run.output, run.output).toContain(`${scenario}: ok`);
      }
      for (const scenario of WHOLE) expect(plain.output).toContain(`${scenario}: ok`);
    },
  );
});
