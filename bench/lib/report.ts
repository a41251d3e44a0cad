import type { ProfileSummary } from './profile.js';
import { rowRatio, type TargetResult } from './targets.js';
import type { RowResult } from './types.js';

export interface RunMeta {
  readonly date: string;
  readonly mode: 'quick' | 'full';
  readonly node: string;
  readonly cpus: string;
  readonly memoryGb: number;
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
  /** Median fdatasync of one overwritten 4 KiB page before and after the suites, µs (probeFsyncUs). */
  readonly fsyncUsBefore?: number;
  readonly fsyncUsAfter?: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly reps: number;
  readonly wallSeconds: number;
  readonly versions: Readonly<Record<string, string>>;
  readonly only?: string;
}

export interface Results {
  readonly meta: RunMeta;
  readonly rows: readonly RowResult[];
  readonly targets: readonly TargetResult[];
  readonly profiles: Readonly<Record<string, ProfileSummary>>;
  /** Why a target was missed, in a sentence or two built from this run's figures. */
  readonly explanations: Readonly<Record<string, string>>;
}

export function fmtNum(n: number | undefined, digits = 0): string {
  if (n === undefined || !Number.isFinite(n)) return '-';
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** Microseconds as µs below 10 ms, else ms. */
export function fmtUs(us: number | undefined): string {
  if (us === undefined || !Number.isFinite(us)) return '-';
  if (us < 10_000) return `${fmtNum(us)} µs`;
  return `${fmtNum(us / 1000, 1)} ms`;
}

export function fmtRatio(r: number | undefined): string {
  if (r === undefined || !Number.isFinite(r)) return '-';
  return `${r >= 10 ? fmtNum(r, 1) : fmtNum(r, 2)}x`;
}

function ratioCell(row: RowResult, rows: readonly RowResult[]): string {
  const ratio = rowRatio(row, rows);
  if (ratio === undefined) return row.baseline === undefined ? '' : '-';
  const what = row.ratioOf === 'p50' ? 'p50 ' : row.ratioOf === 'p99' ? 'p99 ' : '';
  return `${what}${fmtRatio(ratio)} vs \`${row.baseline ?? ''}\``;
}

/** The plain-text table printed at the end of a run. */
export function textTable(results: Results): string {
  const lines: string[] = [];
  const header = ['row', 'ops/s', 'p50', 'p99', 'RSS MB', 'vs baseline'];
  const body = results.rows.map((row) => {
    const m = row.measurement;
    const ratio = rowRatio(row, results.rows);
    return [
      row.id,
      m === undefined ? `skipped: ${row.skipped ?? ''}` : fmtNum(m.opsPerSec),
      fmtUs(m?.p50Us),
      fmtUs(m?.p99Us),
      fmtNum(m?.peakRssMb),
      ratio === undefined
        ? ''
        : `${row.ratioOf === 'ops' || row.ratioOf === undefined ? '' : `${row.ratioOf} `}${fmtRatio(ratio)}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  lines.push(line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line));
  lines.push('');
  lines.push('Targets (ratios measured in this run):');
  for (const t of results.targets) {
    const verdict = t.met === undefined ? 'NOT MEASURED' : t.met ? 'met' : 'MISSED';
    lines.push(
      `  ${verdict.padEnd(12)} ${fmtRatio(t.ratio).padStart(8)} ${t.op} ${t.threshold}x  ${t.label}${t.missing === undefined ? '' : ` (${t.missing})`}`,
    );
  }
  return lines.join('\n');
}

export function targetsTable(results: Results): string {
  const lines = ['| Target | Measured | Target | Met | Rows compared |', '| --- | ---: | ---: | :-: | --- |'];
  for (const t of results.targets) {
    const verdict = t.met === undefined ? 'not measured' : t.met ? 'yes' : '**no**';
    const metric = t.metric === 'ops' ? 'ops/s' : t.metric;
    lines.push(
      `| ${t.label}${t.own === true ? ' (a check of this bench)' : ''} | ${fmtRatio(t.ratio)} | ${t.op === '>=' ? '≥' : '≤'} ${t.threshold}x | ${verdict} | ${metric} of \`${t.numerator}\` / \`${t.denominator}\`${t.missing === undefined ? '' : ` (${t.missing})`} |`,
    );
  }
  return lines.join('\n');
}

export function rowsTables(results: Results): string {
  const groups = new Map<string, RowResult[]>();
  for (const row of results.rows) groups.set(row.group, [...(groups.get(row.group) ?? []), row]);
  const out: string[] = [];
  for (const [group, rows] of groups) {
    out.push(`### ${group}`, '');
    out.push('| Row | System | Scenario | In flight | ops/s | p50 | p99 | Peak RSS | Ratio vs baseline |');
    out.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const row of rows) {
      const m = row.measurement;
      if (m === undefined) {
        out.push(
          `| \`${row.id}\` | ${row.system} | ${row.scenario} | ${row.concurrency} | skipped: ${row.skipped ?? ''} | | | | |`,
        );
        continue;
      }
      out.push(
        `| \`${row.id}\` | ${row.system} | ${row.scenario} | ${row.concurrency} | ${fmtNum(m.opsPerSec)} | ${fmtUs(m.p50Us)} | ${fmtUs(m.p99Us)} | ${fmtNum(m.peakRssMb)} MB | ${ratioCell(row, results.rows)} |`,
      );
    }
    const notes = [
      ...new Set(
        rows.flatMap((row) => [
          ...(row.notes ?? []),
          ...(row.extra === undefined
            ? []
            : [
                `\`${row.id}\`: ${Object.entries(row.extra)
                  .map(
                    ([k, v]) => `${k} ${typeof v === 'number' ? fmtNum(v, Number.isInteger(v) ? 0 : 1) : v}`,
                  )
                  .join(', ')}`,
              ]),
        ]),
      ),
    ];
    if (notes.length > 0) out.push('', ...notes.map((note) => `- ${note}`));
    out.push('');
  }
  return out.join('\n');
}

export function profilesSection(results: Results): string {
  const out: string[] = [];
  for (const t of results.targets) {
    if (t.met !== false) continue;
    out.push(
      `### ${t.label}: ${fmtRatio(t.ratio)} (target ${t.op === '>=' ? '≥' : '≤'} ${t.threshold}x)`,
      '',
    );
    const explanation = results.explanations[t.id];
    if (explanation !== undefined) out.push(explanation, '');
    const profile = t.profileRow === undefined ? undefined : results.profiles[t.profileRow];
    if (profile !== undefined) {
      out.push(
        `CPU profile of \`${t.profileRow ?? ''}\` (V8 CPU profiler over the measured window, ${fmtNum(profile.totalMs)} ms sampled every 100 µs). Native code — a better-sqlite3 statement, a socket write — is listed under the JS function that called it; for SQLite that includes the COMMIT's WAL write and fsync, which run on the event-loop thread. Self time by area:`,
        '',
        '| Area | Self time | Share |',
        '| --- | ---: | ---: |',
        ...profile.areas.map((a) => `| ${a.name} | ${fmtNum(a.selfMs)} ms | ${fmtNum(a.selfPct, 1)}% |`),
        '',
        'Top functions by self time:',
        '',
        '| Function | Self time | Share |',
        '| --- | ---: | ---: |',
        ...profile.functions.map(
          (f) =>
            `| \`${f.name.replaceAll('|', '\\|')}\` | ${fmtNum(f.selfMs)} ms | ${fmtNum(f.selfPct, 1)}% |`,
        ),
        '',
      );
    }
  }
  return out.length === 0 ? 'Every measured target was met in this run.\n' : out.join('\n');
}

export function metaSection(meta: RunMeta): string {
  const versions = Object.entries(meta.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    `- Run: ${meta.date}, \`${meta.mode === 'quick' ? 'npm run bench -- --quick' : 'npm run bench'}\`${meta.only === undefined ? '' : ` (only rows matching \`${meta.only}\`)`}, ${fmtNum(meta.wallSeconds)} s wall time.`,
    `- Machine: ${meta.cpus}, ${fmtNum(meta.memoryGb)} GiB memory, Node ${meta.node}; load average ${meta.loadBefore.map((l) => l.toFixed(2)).join(' / ')} before and ${meta.loadAfter.map((l) => l.toFixed(2)).join(' / ')} after (1/5/15 min).`,
    ...(meta.fsyncUsBefore === undefined || meta.fsyncUsAfter === undefined
      ? []
      : [
          `- Disk: overwriting one 4 KiB page and flushing it (fdatasync) took ${fmtUs(meta.fsyncUsBefore)} (median) before the suites and ${fmtUs(meta.fsyncUsAfter)} after. A COMMIT at synchronous=FULL pays about one such flush, and on this machine it varies several-fold from day to day, which moves every ratio whose two rows spend their time differently.`,
        ]),
    `- Method: closed loops (each of N lanes starts its next call when one settles), ${fmtNum(meta.warmupMs)} ms warm-up and ${fmtNum(meta.durationMs)} ms measured per repetition, ${meta.reps} repetition${meta.reps === 1 ? '' : 's'} per row run round-robin across the rows of a suite (a row and its baseline are measured next to each other), the median repetition by throughput kept. Each suite runs in its own Node process.`,
    `- Versions: ${versions}.`,
  ].join('\n');
}
