import { formatTally, type CheckReport } from './check-report.js';
import type { ToolReport } from './check-tool.js';
import { signed } from './verdict.js';

/**
 * The human report: a heading per tool (its key, its count, notes), one table line per row
 * (row, result, evidence) aligned across tools, and the tally.
 */
export function formatCheckReport(report: CheckReport): string {
  const header = ['row', 'result', 'evidence'] as const;
  const all = report.tools.flatMap((tool) => tool.rows);
  const width = (pick: (cells: readonly [string, string, string]) => string) =>
    Math.max(
      ...[header, ...all.map((r) => [r.title, r.result, r.summary] as const)].map((c) => pick(c).length),
    );
  const w0 = width((c) => c[0]);
  const w1 = width((c) => c[1]);
  const line = (cells: readonly [string, string, string]) =>
    `${cells[0].padEnd(w0)}  ${cells[1].padEnd(w1)}  ${cells[2]}`.trimEnd();
  const out = [`idem check: ${report.target}`];
  const skipped = report.notChecked.filter((n) => n.why === 'readOnlyHint').map((n) => n.tool);
  out.push(
    `checked ${report.tools.map((t) => t.tool).join(', ')}` +
      (skipped.length > 0 ? `; not checked (readOnlyHint): ${skipped.join(', ')}` : ''),
  );
  for (const tool of report.tools) {
    out.push('', heading(tool));
    for (const note of tool.notes) out.push(`  note: ${note}`);
    out.push(line(header), ...tool.rows.map((r) => line([r.title, r.result, r.summary])));
  }
  const concurrency = report.tools.some((t) => t.rows.some((r) => r.row === 'concurrent_duplicates'));
  out.push('', formatTally(report.tally));
  if (concurrency) {
    out.push(
      `(${report.rounds} concurrency rounds: a server that loses the race in 20% of rounds passes them all ` +
        `with probability ${(0.8 ** report.rounds * 100).toPrecision(2)}%)`,
    );
  }
  return `${out.join('\n')}\n`;
}

function heading(tool: ToolReport): string {
  const parts = [
    tool.key === null ? 'no key argument' : `key ${tool.key.name} (${tool.key.why})`,
    tool.count === null
      ? 'effects not counted'
      : `effects counted by ${tool.count.tool} ${tool.count.path}${tool.count.unit === 'lines' ? ' (lines)' : ''} ` +
        `(${signed(tool.count.perAction)} per call)`,
  ];
  if (tool.scope.names.length > 0) parts.push(`scope ${tool.scope.names.join(', ')} (${tool.scope.from})`);
  if (tool.idPath !== null) parts.push(`id at ${tool.idPath}`);
  return `${tool.tool}: ${parts.join('; ')}`;
}
