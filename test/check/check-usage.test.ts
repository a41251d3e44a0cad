import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, freePort, makeTempDir } from '../helpers/mcp-fixtures.js';
import { NAIVE, SCRIPTED, check } from './run-check.js';
import { stdioHint } from '../../packages/idem-cli/src/cli/check-command.js';

let dir: string;
beforeAll(() => {
  dir = makeTempDir('idem-check-usage-');
});
afterAll(cleanup);

const server = ['--', process.execPath, SCRIPTED, 'links'];
const LISTED = 'the server lists: create_note, list_notes';

function config(name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

describe('idem check usage errors: exit 2, naming what is wrong', () => {
  it('before connecting: targets, options, paths', async () => {
    expect(await check([])).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('give exactly one target'),
    });
    expect(await check(['--url', 'http://x/mcp', ...server])).toMatchObject({ exitCode: 2 });
    expect(await check(['--url', 'ftp://x'])).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('--url'),
    });
    expect(await check(['--id-path', 'resource_id', ...server])).toEqual({
      output: '',
      exitCode: 2,
      error: 'JSON path must start with $: "resource_id"',
    });
    expect(await check(['--count-path', '$.notes', ...server])).toMatchObject({
      exitCode: 2,
      error: '--count-path needs --count-tool NAME (the read tool whose result it points into)',
    });
    expect(await check(['--arg', 'workspace', ...server])).toMatchObject({
      exitCode: 2,
      error: '--arg must be NAME=VALUE, got "workspace"',
    });
    expect(await check(['--rounds', '0', ...server])).toMatchObject({
      exitCode: 2,
      error: '--rounds must be an integer from 1 to 1000, got "0"',
    });
    expect(await check(['--config', join(dir, 'missing.json'), ...server])).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('cannot read --config'),
    });
    expect(await check(['--config', config('bad.json', { tool: 'x', colour: 1 }), ...server])).toMatchObject({
      exitCode: 2,
      error: 'check config: unknown field "colour"',
    });
    expect((await check(['--help'])).output).toContain('Usage: idem check');
  });

  it('after listing the tools, before calling one: unknown tools, arguments and keys', async () => {
    expect(await check(['--tool', 'create_nots', ...server])).toEqual({
      output: '',
      exitCode: 2,
      error: `unknown tool "create_nots" (--tool); ${LISTED}`,
    });
    expect(await check(['--count-tool', 'count_notes', ...server])).toMatchObject({
      exitCode: 2,
      error: `unknown tool "count_notes" (--count-tool); ${LISTED}`,
    });
    expect(await check(['--config', config('unknown.json', { tool: 'make_note' }), ...server])).toMatchObject(
      {
        exitCode: 2,
        error: `unknown tool "make_note" (config "tool"); ${LISTED}`,
      },
    );
    expect(await check(['--arg', 'colour=red', ...server])).toMatchObject({
      exitCode: 2,
      error:
        '--arg colour: no tool checked takes an argument "colour" (create_note: workspace, body, idempotency_key)',
    });
    expect(await check(['--key-field', 'request_key', ...server])).toMatchObject({
      exitCode: 2,
      error:
        '--key-field request_key: tool create_note has no argument "request_key" ' +
        '(its arguments: workspace, body, idempotency_key)',
    });
    expect(await check(['--arg', 'idempotency_key=k', ...server])).toMatchObject({
      exitCode: 2,
      error:
        'create_note: the key argument idempotency_key is set by --arg or the config; the checker sets it per action',
    });
  });

  it('a template without a varying part', async () => {
    expect(await check(['--arg', 'workspace=w', '--arg', 'body=same', ...server])).toMatchObject({
      exitCode: 2,
      error:
        'create_note: the arguments have no varying part (workspace, body fixed without {{unique}}); ' +
        "put {{unique}} in a string, e.g. --arg 'body=idem {{unique}}'",
    });
    const fixed = config('fixed.json', {
      tool: 'create_note',
      arguments: { workspace: 'default', body: 'same' },
    });
    expect(await check(['--config', fixed, '--', process.execPath, NAIVE, '--stdio'])).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('create_note: the arguments have no varying part'),
    });
  });

  it('a count that is not a list, or an id path that finds nothing, before any verdict', async () => {
    const notAList = config('count.json', {
      tool: 'create_note',
      count: { tool: 'list_notes', arguments: { workspace: 'w' }, path: '$.notes[0]' },
    });
    expect(await check(['--config', notAList, '--arg', 'workspace=w', ...server])).toMatchObject({
      exitCode: 2,
      error:
        'count path $.notes[0] of list_notes is missing, not a list or a number (the result has: notes (list))',
    });
    expect(
      await check(['--count-tool', 'list_notes', '--count-path', '$', '--arg', 'workspace=w', ...server]),
    ).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('count path $ of list_notes is a object'),
    });
    expect(await check(['--id-path', '$.id', '--arg', 'workspace=w', ...server])).toEqual({
      output: '',
      exitCode: 2,
      error:
        '--id-path $.id finds nothing in a successful create_note result (the first call answered (no id))',
    });
  });
});

describe('idem check runtime failures: exit 1, naming the target and the reason', () => {
  it('an unreachable URL or a command that does not exist', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    expect(await check(['--url', url, '--timeout', '2s'])).toEqual({
      output: '',
      exitCode: 1,
      error: `cannot reach ${url}: connection refused (ECONNREFUSED)`,
    });
    expect(await check(['--', join(dir, 'no-such-server')])).toEqual({
      output: '',
      exitCode: 1,
      error: `cannot connect to ${join(dir, 'no-such-server')}: command not found (ENOENT)`,
    });
  });
});

describe('a command that never answers', () => {
  const command = { command: 'idem', args: ['proxy', '--', 'upstream'], tokenEnv: 'IDEM_TOKEN' };

  it('is told that it must speak MCP on stdio, when the failure is a timeout', () => {
    expect(stdioHint(command, 'Request timed out')).toBe(
      ' (a command must speak MCP on its stdin and stdout: `idem serve` and `idem proxy` need --stdio)',
    );
  });

  it('is not, for a URL or another failure', () => {
    expect(stdioHint({ url: 'http://127.0.0.1:1/mcp' }, 'Request timed out')).toBe('');
    expect(stdioHint(command, 'command not found (ENOENT)')).toBe('');
  });
});
