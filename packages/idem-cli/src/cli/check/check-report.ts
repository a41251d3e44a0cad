import type { ToolReport } from './check-tool.js';
import type { Verdict } from './verdict.js';

/** What `idem check` found, for the table, --json and --junit. */
export interface CheckReport {
  readonly target: string;
  /** fail when any row failed; else inconclusive when any row was; else pass. */
  readonly verdict: Exclude<Verdict, 'skip'>;
  readonly tally: Readonly<Record<Verdict, number>>;
  readonly rounds: number;
  readonly concurrency: number;
  readonly tools: readonly ToolReport[];
  readonly notChecked: ReadonlyArray<{ readonly tool: string; readonly why: string }>;
}

export function checkReport(
  target: string,
  tools: readonly ToolReport[],
  notChecked: CheckReport['notChecked'],
  settings: { rounds: number; concurrency: number },
): CheckReport {
  const rows = tools.flatMap((tool) => tool.rows);
  const tally = { pass: 0, fail: 0, inconclusive: 0, skip: 0 };
  for (const row of rows) tally[row.result] += 1;
  const verdict = tally.fail > 0 ? 'fail' : tally.inconclusive > 0 ? 'inconclusive' : 'pass';
  return { target, verdict, tally, ...settings, tools, notChecked };
}

/** 0 when every row passed or was skipped, 1 when one failed, 3 when none failed but some were inconclusive. */
export function exitStatus(report: CheckReport): 0 | 1 | 3 {
  return report.verdict === 'fail' ? 1 : report.verdict === 'inconclusive' ? 3 : 0;
}

export function formatTally(tally: CheckReport['tally']): string {
  const parts = [`${tally.pass} passed`, `${tally.fail} failed`];
  if (tally.inconclusive > 0) parts.push(`${tally.inconclusive} inconclusive`);
  if (tally.skip > 0) parts.push(`${tally.skip} skipped`);
  return parts.join(', ');
}
