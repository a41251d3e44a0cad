import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { REPO_ROOT, cleanEnv } from './mcp-fixtures.js';

/** The five rows `idem check` runs for a keyed tool when given a second principal. */
export const EVERY_ROW = [
  'lost response, then retry',
  'rounds of 5 concurrent duplicates',
  'same key, other arguments',
  'fresh key, same arguments',
  'another principal, same key',
];

/** Runs the built `idem check` (as a user runs it) against `url` with two principals' tokens. */
export function runBuiltCheck(
  url: string,
  token: string,
  token2: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        join(REPO_ROOT, 'packages', 'idem-cli', 'dist', 'cli', 'main.js'),
        ...['check', '--url', url, '--token', token, '--token2', token2, ...args],
      ],
      { cwd: REPO_ROOT, env: cleanEnv(), timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        }),
    );
  });
}

/** Asserts that `idem check` exited 0 with every row passed. */
export function expectEveryRowPassed(check: { code: number | null; stdout: string; stderr: string }): void {
  expect(check.code, `${check.stdout}\n${check.stderr}`).toBe(0);
  for (const row of EVERY_ROW) expect(check.stdout).toMatch(new RegExp(`${row}\\s+pass`));
  expect(check.stdout).toMatch(/5 passed, 0 failed/);
}
