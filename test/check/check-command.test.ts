import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCommand } from '../../src/cli/check-command.js';
import type { CheckReport } from '../../src/cli/check-report.js';
import { CliError } from '../../src/cli/cli-error.js';
import {
  CLI,
  REPO_ROOT,
  cleanup,
  ensureBuilt,
  freePort,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

const NAIVE = join(REPO_ROOT, 'test', 'check', 'fixtures', 'naive-server.mjs');
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

let dir: string;
let referenceConfig: string;
let tokensFile: string;
let http: ServerProcess;

beforeAll(async () => {
  ensureBuilt();
  dir = makeTempDir('idem-check-');
  tokensFile = join(dir, 'tokens.json');
  writeFileSync(
    tokensFile,
    JSON.stringify({
      [ALICE]: { principal: 'alice', workspaces: ['shared'] },
      [BOB]: { principal: 'bob', workspaces: ['shared'] },
    }),
  );
  referenceConfig = writeConfig('reference.json', 'shared');
  http = await startServerProcess({ args: ['--db', join(dir, 'http.sqlite'), '--tokens', tokensFile] });
});
afterAll(cleanup);

function writeConfig(name: string, workspace: string, extra: Record<string, unknown> = {}): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      tool: 'create_note',
      keyField: 'idempotency_key',
      arguments: { workspace, body: 'idem check {{unique}}' },
      count: { tool: 'list_notes', arguments: { workspace }, path: '$.notes' },
      ...extra,
    }),
  );
  return path;
}

/** Runs `idem check` in-process: its output and its exit status as main.ts would set it. */
async function check(argv: string[]): Promise<{ output: string; exitCode: number; error?: string }> {
  let output = '';
  try {
    await checkCommand(argv, (text) => (output += text));
    return { output, exitCode: 0 };
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    return { output, exitCode: error.exitCode, error: error.message };
  }
}

function rowsOf(output: string): Record<string, CheckReport['rows'][number]> {
  const report = JSON.parse(output) as CheckReport;
  return Object.fromEntries(report.rows.map((row) => [row.row, row]));
}

function expectContractKept(output: string): void {
  const rows = rowsOf(output);
  expect(Object.values(rows).map((r) => [r.row, r.result])).toEqual([
    ['lost_response', 'pass'],
    ['concurrent_duplicates', 'pass'],
    ['conflicting_arguments', 'pass'],
    ['fresh_key', 'pass'],
    ['cross_principal', 'pass'],
  ]);
  const lost = rows.lost_response?.evidence as {
    dropped: { id: string };
    retry: { id: string; replayed: boolean };
    effects: number;
  };
  expect(lost.retry).toEqual({ kind: 'succeeded', id: lost.dropped.id, replayed: true });
  expect(lost.effects).toBe(1);
  expect(rows.concurrent_duplicates?.evidence).toMatchObject({
    calls: 5,
    succeeded: 5,
    effects: 1,
    errors: [],
  });
  expect((rows.concurrent_duplicates?.evidence.ids as string[]).length).toBe(1);
  expect(rows.conflicting_arguments?.evidence).toMatchObject({
    second: { code: 'payload_conflict' },
    effects: 0,
  });
  expect(rows.fresh_key?.evidence).toMatchObject({ effects: 2 });
  const cross = rows.cross_principal?.evidence as {
    first: { id: string };
    other: { id: string; replayed: boolean };
  };
  expect(cross.other).toMatchObject({ kind: 'succeeded', replayed: false });
  expect(cross.other.id).not.toBe(cross.first.id);
}

describe('idem check against the reference server', () => {
  it('passes every row over Streamable HTTP, and prints the table', async () => {
    const table = await check([
      '--config',
      referenceConfig,
      '--url',
      http.url,
      '--token',
      ALICE,
      '--token2',
      BOB,
    ]);
    expect(table.exitCode).toBe(0);
    expect(table.output).toMatch(/^idem check: create_note at http:\/\/127\.0\.0\.1:\d+\/mcp\n/);
    expect(table.output).toMatch(/row\s+result\s+evidence/);
    for (const row of [
      'lost response, then retry',
      '5 concurrent duplicates',
      'same key, other arguments',
      'fresh key, same arguments',
      'another principal, same key',
    ]) {
      expect(table.output).toMatch(new RegExp(`\\n${row}\\s+pass\\s+\\S`));
    }
    expect(table.output).toContain('5 passed, 0 failed');

    const json = await check([
      '--config',
      referenceConfig,
      '--url',
      http.url,
      '--token',
      ALICE,
      '--token2',
      BOB,
      '--json',
    ]);
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.output)).toMatchObject({ passed: true, tool: 'create_note' });
    expectContractKept(json.output);
  });

  it('passes every row over stdio (one server process per principal)', async () => {
    const db = join(dir, 'stdio.sqlite');
    const result = await check([
      '--config',
      referenceConfig,
      '--token',
      ALICE,
      '--token2',
      BOB,
      '--json',
      '--',
      process.execPath,
      CLI,
      'serve',
      '--stdio',
      '--db',
      db,
      '--tokens',
      tokensFile,
    ]);
    expect(result.exitCode).toBe(0);
    expectContractKept(result.output);
  });

  it('skips the cross-principal row without a second token', async () => {
    const result = await check(['--config', referenceConfig, '--url', http.url, '--token', ALICE]);
    expect(result.exitCode).toBe(0);
    expect(result.output).toMatch(/another principal, same key\s+skip\s+no second token/);
    expect(result.output).toContain('4 passed, 0 failed, 1 skipped');
  });
});

describe('idem check against a naive server that creates a resource per call', () => {
  it('fails the lost-response and duplicate rows, with evidence, and exits 1', async () => {
    const config = writeConfig('naive.json', 'default');
    const result = await check(['--config', config, '--json', '--', process.execPath, NAIVE, '--stdio']);

    expect(result.exitCode).toBe(1);
    expect(result.error).toBe('3 of 5 rows failed');
    const rows = rowsOf(result.output);
    expect(rows.lost_response?.result).toBe('fail');
    const lost = rows.lost_response?.evidence as {
      dropped: { id: string };
      retry: { id: string };
      effects: number;
    };
    expect(lost.retry.id).not.toBe(lost.dropped.id);
    expect(lost.effects).toBe(2);
    expect(rows.concurrent_duplicates?.result).toBe('fail');
    expect(rows.concurrent_duplicates?.evidence).toMatchObject({ succeeded: 5, effects: 5 });
    expect((rows.concurrent_duplicates?.evidence.ids as string[]).length).toBe(5);
    expect(rows.conflicting_arguments).toMatchObject({ result: 'fail', evidence: { effects: 1 } });
    expect(rows.fresh_key?.result).toBe('pass');
    expect(rows.cross_principal?.result).toBe('skip');
  });

  it('prints the failing rows in the table too', async () => {
    const config = writeConfig('naive-table.json', 'default');
    const result = await check(['--config', config, '--', process.execPath, NAIVE, '--stdio']);
    expect(result.exitCode).toBe(1);
    expect(result.output).toMatch(
      /lost response, then retry\s+fail\s+dropped note_\S+; retry note_\S+: a second resource; effects \+2/,
    );
    expect(result.output).toMatch(
      /5 concurrent duplicates\s+fail\s+5\/5 succeeded, 5 distinct ids; effects \+5/,
    );
    expect(result.output).toContain('1 passed, 3 failed, 1 skipped');
  });
});

describe('idem check usage', () => {
  it('rejects bad invocations with exit 2 and an unreachable server with exit 1', async () => {
    expect(await check(['--url', http.url])).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('--config'),
    });
    expect(await check(['--config', referenceConfig])).toMatchObject({ exitCode: 2 });
    expect(await check(['--config', referenceConfig, '--url', http.url, '--', 'node'])).toMatchObject({
      exitCode: 2,
    });
    const noUnique = join(dir, 'no-unique.json');
    writeFileSync(
      noUnique,
      JSON.stringify({ tool: 'create_note', arguments: { workspace: 'shared', body: 'same' } }),
    );
    expect(await check(['--config', noUnique, '--url', http.url])).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('{{unique}}'),
    });
    const port = await freePort();
    expect(
      await check(['--config', referenceConfig, '--url', `http://127.0.0.1:${port}/mcp`, '--timeout', '2s']),
    ).toMatchObject({
      exitCode: 1,
      error: expect.stringContaining('cannot connect'),
    });
    const help = await check(['--help']);
    expect(help.output).toContain('Usage: idem check');
  });
});
