import type { CheckReport } from './check-report.js';

/**
 * The report as JUnit XML, for CI pipelines: one `<testsuite>` per tool, one `<testcase>` per row.
 * A failed row is a `<failure>`; an inconclusive one an `<error>` (no verdict could be reached, and
 * it is no pass); a skipped one `<skipped>`. The evidence goes in `<system-out>` as JSON.
 */
export function junitReport(report: CheckReport): string {
  const suites = report.tools.map((tool) => {
    const count = (result: string) => tool.rows.filter((r) => r.result === result).length;
    const seconds = (ms: number) => (ms / 1000).toFixed(3);
    const cases = tool.rows.map((row) => {
      const message = attr(row.summary);
      const verdict =
        row.result === 'fail'
          ? `\n      <failure type="fail" message="${message}">${text(row.summary)}</failure>`
          : row.result === 'inconclusive'
            ? `\n      <error type="inconclusive" message="${message}">${text(row.summary)}</error>`
            : row.result === 'skip'
              ? `\n      <skipped message="${message}"/>`
              : '';
      const out = `\n      <system-out>${text(`${row.summary}\n${JSON.stringify(row.evidence)}`)}</system-out>`;
      return (
        `    <testcase classname="${attr(`idem check.${tool.tool}`)}" name="${attr(row.title)}" ` +
        `time="${seconds(row.durationMs)}">${verdict}${out}\n    </testcase>`
      );
    });
    const time = tool.rows.reduce((sum, r) => sum + r.durationMs, 0);
    return (
      `  <testsuite name="${attr(tool.tool)}" tests="${tool.rows.length}" failures="${count('fail')}" ` +
      `errors="${count('inconclusive')}" skipped="${count('skip')}" time="${seconds(time)}">\n` +
      `${cases.join('\n')}\n  </testsuite>`
    );
  });
  const { tally } = report;
  const tests = tally.pass + tally.fail + tally.inconclusive + tally.skip;
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<testsuites name="${attr(`idem check ${report.target}`)}" tests="${tests}" failures="${tally.fail}" ` +
    `errors="${tally.inconclusive}" skipped="${tally.skip}">\n${suites.join('\n')}\n</testsuites>\n`
  );
}

function text(value: string): string {
  return strip(value).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function attr(value: string): string {
  return text(value).replace(/"/g, '&quot;').replace(/\n/g, '&#10;');
}

/** XML 1.0 cannot carry most control characters, even escaped. */
function strip(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd');
}
