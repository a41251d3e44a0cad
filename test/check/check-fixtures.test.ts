import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';
import { NAIVE, SCRIPTED, check, reportOf, rowsOf, toolOf, verdictsOf } from './run-check.js';

let dir: string;
beforeAll(() => {
  dir = makeTempDir('idem-check-fixtures-');
});
afterAll(cleanup);

const naive = ['--', process.execPath, NAIVE, '--stdio'];
const scripted = (mode: string, ...rest: string[]) => ['--', process.execPath, SCRIPTED, mode, ...rest];

describe('idem check against a naive server that declares a key and ignores it', () => {
  it('fails the lost-response and duplicate rows with evidence, zero-config, and exits 1', async () => {
    const result = await check(['--arg', 'workspace=default', '--json', ...naive]);
    expect(result.exitCode).toBe(1);
    expect(result.error).toBe('3 rows failed (1 passed, 3 failed, 1 skipped)');
    expect(toolOf(result, 'create_note')).toMatchObject({
      key: { name: 'idempotency_key', why: 'its name' },
      count: { tool: 'list_notes', path: '$.notes', perAction: 1, from: 'found' },
    });
    expect(verdictsOf(result, 'create_note')).toEqual([
      ['lost_response', 'fail'],
      ['concurrent_duplicates', 'fail'],
      ['conflicting_arguments', 'fail'],
      ['fresh_key', 'pass'],
      ['cross_principal', 'skip'],
    ]);
    const rows = rowsOf(result, 'create_note');
    const lost = rows.lost_response?.evidence as {
      dropped: { id: { value: string } };
      retry: { id: { value: string } };
      effects: number;
    };
    expect(lost.retry.id.value).not.toBe(lost.dropped.id.value);
    expect(lost.effects).toBe(2);
    // The first round already fails: the row stops there.
    expect(rows.concurrent_duplicates?.evidence).toMatchObject({ rounds: 1, calls: 5 });
    const [round] = (
      rows.concurrent_duplicates?.evidence as { perRound: Array<{ ids: string[]; effects: number }> }
    ).perRound as [{ ids: string[]; effects: number }];
    expect(round.ids).toHaveLength(5);
    expect(round.effects).toBe(5);
    expect(rows.conflicting_arguments).toMatchObject({ result: 'fail', evidence: { effects: 1 } });
  }, 60_000);

  it('prints the failing rows in the table, with a --config too', async () => {
    const config = join(dir, 'naive.json');
    writeFileSync(
      config,
      JSON.stringify({
        tool: 'create_note',
        arguments: { workspace: 'default', body: 'idem check {{unique}}' },
        count: { tool: 'list_notes', arguments: { workspace: 'default' }, path: '$.notes' },
      }),
    );
    const result = await check(['--config', config, ...naive]);
    expect(result.exitCode).toBe(1);
    expect(result.output).toMatch(
      /lost response, then retry\s+fail\s+the retry made a second resource \(\$\.note_id: (note_\S+), then (?!\1)(note_\S+)\); effects \+2 where one action makes \+1: dropped \1, retry \2, effects \+2\n/,
    );
    expect(result.output).toMatch(
      /20 rounds of 5 concurrent duplicates\s+fail\s+5 distinct ids for one action; effects \+5 where one action makes \+1: round 1 of 20: 5\/5 succeeded, 5 distinct ids, effects \+5\n/,
    );
    expect(result.output).toMatch(
      /same key, other arguments\s+fail\s+accepted as a second action under a used key/,
    );
    expect(result.output).toContain('\n1 passed, 3 failed, 1 skipped\n');
  }, 60_000);
});

describe('idem check against a racy server (key checked, then stored after an await in half the calls)', () => {
  it('fails the duplicate row within 20 rounds, and only that row', async () => {
    const result = await check(['--arg', 'workspace=w', '--json', ...scripted('racy', '0.5')]);
    expect(result.exitCode).toBe(1);
    expect(verdictsOf(result, 'create_note')).toEqual([
      ['lost_response', 'pass'],
      ['concurrent_duplicates', 'fail'],
      ['conflicting_arguments', 'pass'],
      ['fresh_key', 'pass'],
      ['cross_principal', 'skip'],
    ]);
    // The race is lost in about half the rounds, so one run of a single round passes half the time;
    // all 20 pass with probability 2^-20.
    const evidence = rowsOf(result, 'create_note').concurrent_duplicates?.evidence as {
      rounds: number;
      perRound: Array<{ result: string; ids: string[]; effects: number }>;
    };
    const last = evidence.perRound[evidence.perRound.length - 1];
    expect(last?.result).toBe('fail');
    expect(last?.ids.length).toBeGreaterThan(1);
    expect(last?.effects).toBeGreaterThan(1);
    expect(evidence.perRound.slice(0, -1).every((r) => r.result === 'pass')).toBe(true);
  }, 60_000);
});

describe('ids and keys where they are', () => {
  it('takes the id of a resource_link block, and exits 0 when every row passes', async () => {
    const result = await check(['--arg', 'workspace=w', '--json', ...scripted('links')]);
    expect(result.exitCode).toBe(0);
    const rows = rowsOf(result, 'create_note');
    expect(rows.lost_response?.evidence).toMatchObject({
      dropped: { id: { at: 'resource_link', echo: false } },
      retry: { id: { at: 'resource_link' } },
    });
    expect(rows.lost_response?.summary).toMatch(/^the retry got the same id \(resource_link\)/);
  }, 60_000);

  it('finds a camelCase key (idempotencyKey) and id (noteId)', async () => {
    const result = await check(['--arg', 'workspace=w', '--json', ...scripted('camel')]);
    expect(result.exitCode).toBe(0);
    expect(toolOf(result, 'create_note').key).toEqual({ name: 'idempotencyKey', why: 'its name' });
    expect(rowsOf(result, 'create_note').fresh_key?.evidence).toMatchObject({
      first: { id: { at: '$.noteId' } },
    });
  }, 60_000);

  it('does not fail a server on a found count that stops at a page; a configured count is taken at its word', async () => {
    const found = await check(['--arg', 'workspace=w', '--json', ...scripted('capped')]);
    expect(found.exitCode).toBe(0);
    const rows = rowsOf(found, 'create_note');
    expect(rows.fresh_key).toMatchObject({ result: 'pass', evidence: { effects: 0 } });
    expect(rows.fresh_key?.summary).toMatch(/^two ids: /);
    const configured = await check([
      '--arg',
      'workspace=w',
      '--count-tool',
      'list_notes',
      '--count-path',
      '$.notes',
      '--json',
      ...scripted('capped'),
    ]);
    expect(configured.exitCode).toBe(1);
    expect(rowsOf(configured, 'create_note').fresh_key?.summary).toMatch(
      /^effects \+0 where two actions make \+2: /,
    );
  }, 60_000);

  it('uses --id-path, and --count-tool with a calibrated path', async () => {
    const result = await check([
      '--arg',
      'workspace=w',
      '--id-path',
      '$.noteId',
      '--count-tool',
      'list_notes',
      '--json',
      ...scripted('camel'),
    ]);
    expect(result.exitCode).toBe(0);
    expect(toolOf(result, 'create_note')).toMatchObject({
      idPath: '$.noteId',
      count: { tool: 'list_notes', path: '$.notes', from: '--count-tool', perAction: 1 },
    });
  }, 60_000);

  it('without ids or a count, passes nothing: the rows say what is missing', async () => {
    // The naive server with --no-ids answers "created" and lists no read tool: nothing to compare.
    const result = await check([
      '--arg',
      'workspace=w',
      '--tool',
      'create_note',
      '--json',
      ...naive,
      '--no-ids',
    ]);
    expect(result.exitCode).toBe(1);
    expect(toolOf(result, 'create_note').notes).toEqual([
      'no read tool to count effects with (pass --count-tool NAME)',
    ]);
    expect(verdictsOf(result, 'create_note')).toEqual([
      ['lost_response', 'inconclusive'],
      ['concurrent_duplicates', 'inconclusive'],
      ['conflicting_arguments', 'fail'], // accepting other arguments under a used key needs no id to see
      ['fresh_key', 'inconclusive'],
      ['cross_principal', 'skip'],
    ]);
    expect(rowsOf(result, 'create_note').lost_response?.summary).toBe(
      'no evidence: no id in the results (pass --id-path); no count tool (pass --count-tool NAME): ' +
        'dropped (no id), retry (no id)',
    );
  }, 60_000);
});

describe('--junit', () => {
  it('writes one test case per row, failures and skips marked, for CI', async () => {
    const file = join(dir, 'junit.xml');
    const result = await check(['--arg', 'workspace=default', '--junit', file, ...naive]);
    expect(result.exitCode).toBe(1);
    const xml = readFileSync(file, 'utf8');
    expect(xml).toMatch(
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="idem check [^"]+" tests="5" failures="3" errors="0" skipped="1">/,
    );
    expect(xml).toContain('<testsuite name="create_note" tests="5" failures="3" errors="0" skipped="1"');
    expect(xml.match(/<testcase /g)).toHaveLength(5);
    expect(xml).toMatch(
      /<testcase classname="idem check\.create_note" name="lost response, then retry" time="[\d.]+">\n\s+<failure type="fail" message="the retry made a second resource/,
    );
    expect(xml).toMatch(/name="fresh key, same arguments" time="[\d.]+">\n\s+<system-out>/);
    expect(xml).toMatch(
      /name="another principal, same key" time="[\d.]+">\n\s+<skipped message="no second token \(--token2\)"\/>/,
    );
    expect(reportOf(await check(['--arg', 'workspace=default', '--json', ...naive])).verdict).toBe('fail');
  }, 60_000);
});
