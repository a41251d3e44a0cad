import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';
import { FIXTURES, check } from './run-check.js';

// Whatever `idem check` starts, it stops: the command and every process that command started, on
// success, on failure, on a connect timeout, and when check itself is sent SIGTERM, SIGINT or SIGKILL.
const LINGERING = join(FIXTURES, 'lingering-server.mjs');
const unix = process.platform !== 'win32';

let dir: string;
const started: number[] = [];
let files = 0;
beforeAll(() => {
  dir = makeTempDir('idem-check-stops-');
});
afterAll(() => {
  // A test that failed may have left processes: end them here, by the ids the fixture wrote.
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  cleanup();
});

function pidfile(): string {
  files += 1;
  return join(dir, `pids-${files}.txt`);
}

/** True while the process exists and is not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return existsSync(`/proc/${pid}`) || process.platform !== 'linux';
  }
}

async function pidsIn(file: string, count: number, withinMs = 30_000): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    const pids = text
      .split('\n')
      .filter((line) => line !== '')
      .map(Number);
    if (pids.length >= count && text.endsWith('\n')) {
      started.push(...pids);
      return pids;
    }
    if (Date.now() > deadline) throw new Error(`${file}: no ${count} process ids within ${withinMs} ms`);
    await sleep(50);
  }
}

/** The processes still running after a generous wait (none, when check stopped what it started). */
async function survivors(pids: readonly number[], withinMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = pids.filter(alive);
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(50);
  }
}

describe.runIf(unix)('idem check stops everything it started', () => {
  it('a command that never answers on stdio, after the connect timeout', async () => {
    const file = pidfile();
    const result = await check(['--', process.execPath, LINGERING, file, 'silent']);
    expect(result.exitCode).toBe(1);
    expect(result.error).toMatch(/timed out.*`idem serve` and `idem proxy` need --stdio/);
    const pids = await pidsIn(file, 2);
    expect(await survivors(pids)).toEqual([]);
  }, 60_000);

  it('a wrapper and its server, after a check that passed', async () => {
    const file = pidfile();
    const result = await check(['--arg', 'workspace=w', '--', process.execPath, LINGERING, file, 'serves']);
    expect(result.exitCode).toBe(0);
    const pids = await pidsIn(file, 3);
    expect(await survivors(pids)).toEqual([]);
  }, 60_000);

  it('a wrapper and its server, after a usage error found once the tools were listed', async () => {
    const file = pidfile();
    const result = await check(['--tool', 'nope', '--', process.execPath, LINGERING, file, 'serves']);
    expect(result.exitCode).toBe(2);
    const pids = await pidsIn(file, 3);
    expect(await survivors(pids)).toEqual([]);
  }, 60_000);

  describe('when check itself is stopped (the built CLI)', () => {
    beforeAll(() => ensureBuilt(), 300_000);

    for (const signal of ['SIGTERM', 'SIGINT', 'SIGKILL'] as const) {
      it(`by ${signal}`, async () => {
        const file = pidfile();
        const child = spawn(
          process.execPath,
          [CLI, 'check', '--timeout', '60s', '--', process.execPath, LINGERING, file, 'silent'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
          child.once('exit', (code, how) => resolve({ code, signal: how })),
        );
        try {
          const pids = await pidsIn(file, 2);
          child.kill(signal);
          const end = await Promise.race([exited, sleep(20_000).then(() => undefined)]);
          expect(end, `check did not end after ${signal}; stderr: ${stderr}`).toBeDefined();
          // Stopped by the signal, as it would have been without its handler, after its cleanup.
          expect(end?.signal).toBe(signal);
          if (signal !== 'SIGKILL') expect(stderr).toContain(`interrupted by ${signal}`);
          expect(await survivors(pids)).toEqual([]);
        } finally {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        }
      }, 60_000);
    }
  });
});
