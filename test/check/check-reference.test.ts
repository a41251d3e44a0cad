import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  cleanup,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { check, reportOf, rowsOf, toolOf, verdictsOf, type CheckResult } from './run-check.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const ALL_PASS = [
  ['lost_response', 'pass'],
  ['concurrent_duplicates', 'pass'],
  ['conflicting_arguments', 'pass'],
  ['fresh_key', 'pass'],
  ['cross_principal', 'pass'],
];

let dir: string;
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
  http = await startServerProcess({ args: ['--db', join(dir, 'http.sqlite'), '--tokens', tokensFile] });
});
afterAll(cleanup);

/** create_note keeps the contract, with ids compared and effects counted by list_notes. */
function expectNotesKept(result: CheckResult): void {
  expect(verdictsOf(result, 'create_note')).toEqual(ALL_PASS);
  const rows = rowsOf(result, 'create_note');
  const lost = rows.lost_response?.evidence as {
    dropped: { id: { value: string; at: string } };
    retry: { id: { value: string }; replayed: boolean };
    effects: number;
  };
  expect(lost.dropped.id.at).toBe('$.resource_id');
  expect(lost.retry).toMatchObject({
    kind: 'succeeded',
    id: { value: lost.dropped.id.value },
    replayed: true,
  });
  expect(lost.effects).toBe(1);
  const duplicates = rows.concurrent_duplicates?.evidence as {
    rounds: number;
    perRound: Array<{ succeeded: number; ids: string[]; effects: number; errors: string[] }>;
  };
  expect(duplicates.rounds).toBe(20);
  for (const round of duplicates.perRound) {
    expect(round).toMatchObject({ succeeded: 5, effects: 1, errors: [] });
    expect(round.ids).toHaveLength(1);
  }
  expect(rows.conflicting_arguments?.evidence).toMatchObject({
    second: { code: 'payload_conflict' },
    effects: 0,
  });
  expect(rows.fresh_key?.evidence).toMatchObject({ effects: 2 });
  const cross = rows.cross_principal?.evidence as {
    first: { id: { value: string } };
    other: { id: { value: string }; replayed: boolean };
  };
  expect(cross.other).toMatchObject({ kind: 'succeeded', replayed: false });
  expect(cross.other.id.value).not.toBe(cross.first.id.value);
}

describe('idem check, zero-config, against the reference server', () => {
  it('checks every mutating tool over Streamable HTTP: all rows pass, and prints the table', async () => {
    const args = ['--url', http.url, '--arg', 'workspace=shared', '--token', ALICE, '--token2', BOB];
    const json = await check([...args, '--json']);
    expect(json.exitCode).toBe(0);
    const report = reportOf(json);
    expect(report).toMatchObject({ verdict: 'pass', rounds: 20, concurrency: 5 });
    expect(report.tools.map((t) => t.tool)).toEqual(['create_note', 'start_deployment', 'cancel_operation']);
    expect(report.notChecked).toEqual([
      { tool: 'get_note', why: 'readOnlyHint' },
      { tool: 'list_notes', why: 'readOnlyHint' },
      { tool: 'get_operation', why: 'readOnlyHint' },
    ]);
    expectNotesKept(json);
    expect(toolOf(json, 'create_note')).toMatchObject({
      key: { name: 'idempotency_key', why: 'its name' },
      count: { tool: 'list_notes', path: '$.notes', perAction: 1, from: 'found' },
      arguments: { body: 'idem check {{unique}}', workspace: 'shared' },
    });
    // A durable tool: answered accepted with an operation_id first, with a resource_id later; compared by operation_id.
    expect(verdictsOf(json, 'start_deployment')).toEqual(ALL_PASS);
    const deployment = rowsOf(json, 'start_deployment');
    expect(deployment.lost_response?.summary).toMatch(/^the retry got the same id \(\$\.operation_id\)/);
    // cancel_operation needs an existing operation and has no key: annotated idempotentHint, it is not run.
    expect(verdictsOf(json, 'cancel_operation')).toEqual([
      ['key_argument', 'skip'],
      ['sample_arguments', 'skip'],
    ]);
    expect(rowsOf(json, 'cancel_operation').sample_arguments?.summary).toBe(
      'not run: needs the id of something that exists: operation_id (pass --arg operation_id=VALUE)',
    );

    const table = await check([...args, '--tool', 'create_note']);
    expect(table.exitCode).toBe(0);
    expect(table.output).toMatch(/^idem check: http:\/\/127\.0\.0\.1:\d+\/mcp\n/);
    expect(table.output).toContain(
      'create_note: key idempotency_key (its name); effects counted by list_notes $.notes (+1 per call)',
    );
    for (const row of [
      'lost response, then retry',
      '20 rounds of 5 concurrent duplicates',
      'same key, other arguments',
      'fresh key, same arguments',
      'another principal, same key',
    ]) {
      expect(table.output).toMatch(new RegExp(`\\n${row}\\s+pass\\s+\\S`));
    }
    expect(table.output).toMatch(
      /lost response, then retry\s+pass\s+the retry got the same id \(\$\.resource_id\), one action's effect \(\+1\): dropped (note_\w+), retry \1 \(replayed\), effects \+1\n/,
    );
    expect(table.output).toContain('\n5 passed, 0 failed\n');
  }, 60_000);

  it('passes over stdio with --arg workspace=default alone (one server process)', async () => {
    const result = await check([
      '--arg',
      'workspace=default',
      '--json',
      '--',
      process.execPath,
      CLI,
      'serve',
      '--stdio',
      '--db',
      join(dir, 'stdio.sqlite'),
    ]);
    expect(result.exitCode).toBe(0);
    expect(reportOf(result).verdict).toBe('pass');
    expect(verdictsOf(result, 'create_note').slice(0, 4)).toEqual(ALL_PASS.slice(0, 4));
    expect(rowsOf(result, 'create_note').cross_principal).toMatchObject({
      result: 'skip',
      summary: 'no second token (--token2)',
    });
    expect(verdictsOf(result, 'start_deployment').slice(0, 4)).toEqual(ALL_PASS.slice(0, 4));
  }, 60_000);

  it('still takes a --config file (the arguments template, the count), over stdio per principal', async () => {
    const config = join(dir, 'reference.json');
    writeFileSync(
      config,
      JSON.stringify({
        tool: 'create_note',
        keyField: 'idempotency_key',
        arguments: { workspace: 'shared', body: 'idem check {{unique}}' },
        count: { tool: 'list_notes', arguments: { workspace: 'shared' }, path: '$.notes' },
      }),
    );
    const result = await check([
      '--config',
      config,
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
      join(dir, 'config.sqlite'),
      '--tokens',
      tokensFile,
    ]);
    expect(result.exitCode).toBe(0);
    expect(reportOf(result).tools.map((t) => t.tool)).toEqual(['create_note']);
    expect(toolOf(result, 'create_note')).toMatchObject({
      key: { name: 'idempotency_key', why: 'the config' },
      count: { tool: 'list_notes', path: '$.notes', from: 'config', perAction: 1 },
      arguments: { workspace: 'shared', body: 'idem check {{unique}}' },
    });
    expectNotesKept(result);
  }, 60_000);

  it('refuses the sample arguments honestly when the workspace is not given: inconclusive, exit 3', async () => {
    const result = await check(['--url', http.url, '--token', ALICE, '--tool', 'create_note', '--json']);
    expect(result.exitCode).toBe(3);
    expect(result.error).toBe('no row failed, but 1 is inconclusive (0 passed, 0 failed, 1 inconclusive)');
    expect(verdictsOf(result, 'create_note')).toEqual([['sample_arguments', 'inconclusive']]);
    expect(rowsOf(result, 'create_note').sample_arguments?.summary).toMatch(
      /^the server refused the sample arguments \(forbidden: .+\): fix them with --arg NAME=VALUE or --config; nothing else was run$/,
    );
  }, 60_000);
});
