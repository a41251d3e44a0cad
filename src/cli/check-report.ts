import type { RowResult } from './check-rows.js';

export interface CheckReport {
  readonly target: string;
  readonly tool: string;
  /** True when every row that ran passed (skipped rows do not count). */
  readonly passed: boolean;
  readonly rows: readonly RowResult[];
}

export function checkReport(target: string, tool: string, rows: readonly RowResult[]): CheckReport {
  return { target, tool, passed: rows.every((row) => row.result !== 'fail'), rows };
}

/** The human table: one line per row (row, pass/fail, evidence) and a tally. */
export function formatCheckReport(report: CheckReport): string {
  const header = ['row', 'result', 'evidence'] as const;
  const lines = report.rows.map((row) => [row.title, row.result, row.summary] as const);
  const width = (i: 0 | 1) => Math.max(header[i].length, ...lines.map((line) => line[i].length));
  const format = (cells: readonly [string, string, string]) =>
    `${cells[0].padEnd(width(0))}  ${cells[1].padEnd(width(1))}  ${cells[2]}`.trimEnd();
  const count = (result: RowResult['result']) => report.rows.filter((row) => row.result === result).length;
  const skipped = count('skip');
  return [
    `idem check: ${report.tool} at ${report.target}`,
    '',
    format(header),
    ...lines.map(format),
    '',
    `${count('pass')} passed, ${count('fail')} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`,
    '',
  ].join('\n');
}
