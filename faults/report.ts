import { cpus, totalmem } from 'node:os';
import { WRONG_COLUMNS } from './lib/checker.js';
import { faultTotal, type ScenarioResult } from './lib/scenario.js';

/** Whether a result is clean: it ran, the nemesis fired, and every wrong column is zero. */
export function resultPassed(result: ScenarioResult): boolean {
  if (result.skipped !== undefined) return true;
  return (
    result.error === undefined &&
    faultTotal(result.faults) > 0 &&
    WRONG_COLUMNS.every((c) => result.counts[c] === 0)
  );
}

/** The markdown report of a run: one row per scenario and seed, with its faults, wrong columns and replay command. */
export function renderReport(results: readonly ScenarioResult[], command: string, startedAt: Date): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const lines = [
    '# Fault suite report',
    '',
    `Run ${startedAt.toISOString()} with \`${command}\` on ${cpus().length} × ${cpu}, ` +
      `${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}/${process.arch}.`,
    '',
    `| scenario | seed | operations | faults injected | ${WRONG_COLUMNS.join(' | ')} | finals | time | verdict |`,
    `| --- | ---: | ---: | --- | ${WRONG_COLUMNS.map(() => '---:').join(' | ')} | --- | ---: | --- |`,
  ];
  for (const r of results) {
    const faults = Object.entries(r.faults)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ');
    const finals = Object.entries(r.finals)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ');
    const verdict = r.skipped
      ? `skipped: ${r.skipped}`
      : r.error
        ? `error: ${r.error.split('\n')[0]}`
        : resultPassed(r)
          ? 'pass'
          : '**FAIL**';
    lines.push(
      `| ${r.name} | ${r.seed} | ${r.operations} | ${faults || '—'} | ${WRONG_COLUMNS.map((c) => (r.counts[c] === 0 ? '0' : `**${r.counts[c]}**`)).join(' | ')} | ${finals || '—'} | ${(r.durationMs / 1000).toFixed(1)} s | ${verdict} |`,
    );
  }
  const failed = results.filter((r) => !resultPassed(r));
  if (failed.length > 0) {
    lines.push('', '## Findings', '');
    for (const r of failed) {
      lines.push(
        `- **${r.name}** (seed ${r.seed}; replay \`npm run faults -- --scenario ${r.name} --seed ${r.seed}\`):`,
      );
      for (const finding of r.findings.slice(0, 8)) lines.push(`  - ${finding}`);
      if (r.findings.length > 8) lines.push(`  - … ${r.findings.length - 8} more`);
    }
  }
  return `${lines.join('\n')}\n`;
}
