import { fork } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'throwing-effect.mjs');

interface Answer {
  ok: boolean;
  code?: string;
  message?: string;
  operationId?: string;
}

/** Runs the fixture in its own process: what it answered, and everything it wrote on stdout and stderr. */
async function run(mode: 'default' | 'console') {
  const child = fork(FIXTURE, [join(makeTempDir('idem-default-logger-'), 'db.sqlite'), mode], {
    silent: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let answers: { succeeded: Answer; failed: Answer } | undefined;
  child.on('message', (message) => (answers = message as typeof answers));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, stderr).toBe(0);
  if (answers === undefined) throw new Error(`no answer from the fixture: ${stderr}`);
  return { ...answers, stdout, stderr };
}

beforeAll(ensureBuilt, 120_000);
afterAll(cleanup);

describe.each(['default', 'console'] as const)('an Executor with logger %s', (mode) => {
  it('writes the details an internal answer points to on stderr, and nothing on stdout', async () => {
    const { succeeded, failed, stdout, stderr } = await run(mode);
    expect(stdout).toBe('');
    expect(succeeded.ok).toBe(true);
    expect(failed).toMatchObject({ ok: false, code: 'internal' });
    expect(failed.operationId).toMatch(/^op_/);
    expect(failed.message).toContain(`The server log has the details under operation ${failed.operationId}.`);

    const lines = stderr
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        event: 'idem.call',
        tool: 'create_note@v1',
        outcome: 'executed',
        operation_id: succeeded.operationId,
      }),
      expect.objectContaining({
        level: 'error',
        event: 'idem.call',
        tool: 'archive_note@v1',
        outcome: 'internal',
        operation_id: failed.operationId,
        error_source: 'effect',
        error_name: 'TypeError',
        error_message: 'notes.archive is not a function',
        error_stack: expect.stringContaining('throwing-effect.mjs'),
      }),
    ]);
    expect(stderr).not.toContain('private body 5e1c');
    expect(stderr).not.toContain('k-broken');
  });
});
