import { describe, expect, it } from 'vitest';
import { checkReport } from '../../packages/idem-cli/src/cli/check/check-report.js';
import type { ToolReport } from '../../packages/idem-cli/src/cli/check/check-tool.js';
import { junitReport } from '../../packages/idem-cli/src/cli/check/junit-report.js';
import type { RowResult } from '../../packages/idem-cli/src/cli/check/verdict.js';

const row = (result: RowResult['result'], summary: string): RowResult => ({
  row: 'lost_response',
  title: `row <${result}>`,
  result,
  summary,
  evidence: { note: 'a & b' },
  sent: [],
  durationMs: 1234,
});

const tool = (name: string, rows: RowResult[]): ToolReport => ({
  tool: name,
  verdict: 'fail',
  key: null,
  scope: { names: [], from: 'found' },
  arguments: {},
  count: null,
  idPath: null,
  firstCall: null,
  notes: [],
  rows,
});

describe('junitReport', () => {
  it('maps fail, inconclusive and skip to failure, error and skipped, and escapes what XML cannot carry', () => {
    const report = checkReport(
      'node "server.mjs" --x',
      [
        tool('create_<note>', [
          row('pass', 'ok'),
          row('fail', 'a "second" resource & more\u0001'),
          row('inconclusive', 'no evidence: <none>'),
          row('skip', 'no second token'),
        ]),
      ],
      [],
      { rounds: 20, concurrency: 5 },
    );
    const xml = junitReport(report);
    expect(xml).toBe(
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<testsuites name="idem check node &quot;server.mjs&quot; --x" tests="4" failures="1" errors="1" skipped="1">',
        '  <testsuite name="create_&lt;note&gt;" tests="4" failures="1" errors="1" skipped="1" time="4.936">',
        '    <testcase classname="idem check.create_&lt;note&gt;" name="row &lt;pass&gt;" time="1.234">',
        '      <system-out>ok',
        '{"note":"a &amp; b"}</system-out>',
        '    </testcase>',
        '    <testcase classname="idem check.create_&lt;note&gt;" name="row &lt;fail&gt;" time="1.234">',
        '      <failure type="fail" message="a &quot;second&quot; resource &amp; more\ufffd">a "second" resource &amp; more\ufffd</failure>',
        '      <system-out>a "second" resource &amp; more\ufffd',
        '{"note":"a &amp; b"}</system-out>',
        '    </testcase>',
        '    <testcase classname="idem check.create_&lt;note&gt;" name="row &lt;inconclusive&gt;" time="1.234">',
        '      <error type="inconclusive" message="no evidence: &lt;none&gt;">no evidence: &lt;none&gt;</error>',
        '      <system-out>no evidence: &lt;none&gt;',
        '{"note":"a &amp; b"}</system-out>',
        '    </testcase>',
        '    <testcase classname="idem check.create_&lt;note&gt;" name="row &lt;skip&gt;" time="1.234">',
        '      <skipped message="no second token"/>',
        '      <system-out>no second token',
        '{"note":"a &amp; b"}</system-out>',
        '    </testcase>',
        '  </testsuite>',
        '</testsuites>',
        '',
      ].join('\n'),
    );
    expect(report).toMatchObject({ verdict: 'fail', tally: { pass: 1, fail: 1, inconclusive: 1, skip: 1 } });
  });
});
