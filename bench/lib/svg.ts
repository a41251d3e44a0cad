import type { TargetResult } from './targets.js';
import type { RowResult } from './types.js';

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
const GREEN = '#2e7d32';
const RED = '#c62828';
const GREY = '#9e9e9e';

function esc(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

function fmtRatio(x: number): string {
  return x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toFixed(2);
}

function fmtOps(x: number): string {
  if (x >= 1_000_000) return `${(x / 1_000_000).toFixed(1)}M`;
  if (x >= 10_000) return `${Math.round(x / 1000)}k`;
  if (x >= 1000) return `${(x / 1000).toFixed(1)}k`;
  return `${Math.round(x)}`;
}

/** A log axis from `min` to `max` mapped onto [x0, x1]. */
function logScale(min: number, max: number, x0: number, x1: number) {
  const lo = Math.log10(min);
  const hi = Math.log10(max);
  return (v: number) => x0 + ((Math.log10(Math.min(max, Math.max(min, v))) - lo) / (hi - lo)) * (x1 - x0);
}

/**
 * Two panels: every target's measured ratio against its threshold (log scale; green met, red
 * missed), and first-execution throughput of the baselines, the peer and Idem (log scale).
 */
export function renderChart(
  results: readonly TargetResult[],
  rows: readonly RowResult[],
  title: string,
): string {
  const width = 1060;
  const labelWidth = 540;
  const x0 = labelWidth + 10;
  const x1 = width - 110;
  const rowHeight = 26;
  const top = 70;
  const panel1Height = top + results.length * rowHeight + 40;
  const parts: string[] = [];

  // Panel 1: ratios against targets.
  const ratioScale = logScale(0.1, 100, x0, x1);
  parts.push(`<text x="16" y="28" font-size="18" font-weight="600" ${FONT}>${esc(title)}</text>`);
  parts.push(
    `<text x="16" y="50" font-size="13" fill="#555" ${FONT}>Measured ratio (bar) against the target (black tick), log scale; green = met, red = missed, grey = not measured</text>`,
  );
  for (const tick of [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]) {
    const x = ratioScale(tick);
    parts.push(
      `<line x1="${x}" y1="${top - 8}" x2="${x}" y2="${top + results.length * rowHeight}" stroke="#e0e0e0"/>`,
    );
    parts.push(
      `<text x="${x}" y="${top + results.length * rowHeight + 16}" font-size="11" text-anchor="middle" fill="#555" ${FONT}>${tick}x</text>`,
    );
  }
  results.forEach((result, i) => {
    const y = top + i * rowHeight;
    parts.push(
      `<text x="${labelWidth}" y="${y + 13}" font-size="12" text-anchor="end" ${FONT}>${esc(result.label)}</text>`,
    );
    const tx = ratioScale(result.threshold);
    if (result.ratio !== undefined && Number.isFinite(result.ratio)) {
      const color = result.met ? GREEN : RED;
      const bx = ratioScale(result.ratio);
      parts.push(
        `<rect x="${x0}" y="${y + 2}" width="${Math.max(1, bx - x0)}" height="${rowHeight - 10}" fill="${color}" opacity="0.85"/>`,
      );
      parts.push(
        `<text x="${x1 + 8}" y="${y + 13}" font-size="12" fill="${color}" ${FONT}>${fmtRatio(result.ratio)}x ${result.op === '>=' ? '≥' : '≤'} ${result.threshold}x</text>`,
      );
    } else {
      parts.push(
        `<rect x="${x0}" y="${y + 2}" width="${x1 - x0}" height="${rowHeight - 10}" fill="${GREY}" opacity="0.25"/>`,
      );
      parts.push(
        `<text x="${x1 + 8}" y="${y + 13}" font-size="12" fill="${GREY}" ${FONT}>not measured</text>`,
      );
    }
    parts.push(
      `<line x1="${tx}" y1="${y}" x2="${tx}" y2="${y + rowHeight - 6}" stroke="#000" stroke-width="2"/>`,
    );
  });

  // Panel 2: first-execution throughput by system and calls in flight.
  const series: { label: string; ids: [string, string, string] }[] = [
    {
      label: 'SQLite FULL floor (bare INSERT)',
      ids: ['sqlite-full/floor/first/c1', 'sqlite-full/floor/first/c8', 'sqlite-full/floor/first/c64'],
    },
    {
      label: 'SQLite FULL naive idempotent txn',
      ids: ['sqlite-full/naive/first/c1', 'sqlite-full/naive/first/c8', 'sqlite-full/naive/first/c64'],
    },
    {
      label: 'SQLite FULL receipt storage floor (no Idem code)',
      ids: ['sqlite-full/receipt-floor/first/c1', '', 'sqlite-full/receipt-floor/first/c64'],
    },
    {
      label: 'Idem SQLite FULL, group commit (default)',
      ids: ['sqlite-full/idem/first/c1', 'sqlite-full/idem/first/c8', 'sqlite-full/idem/first/c64'],
    },
    {
      label: 'Idem SQLite FULL, group commit off',
      ids: ['', 'sqlite-full/idem-nogc/first/c8', 'sqlite-full/idem-nogc/first/c64'],
    },
    {
      label: 'Powertools + Redis (fsync always)',
      ids: ['pt-aof/powertools/first/c1', 'pt-aof/powertools/first/c8', ''],
    },
    {
      label: 'SQLite NORMAL floor',
      ids: ['sqlite-normal/floor/first/c1', 'sqlite-normal/floor/first/c8', 'sqlite-normal/floor/first/c64'],
    },
    {
      label: 'Idem SQLite NORMAL (default)',
      ids: ['sqlite-normal/idem/first/c1', 'sqlite-normal/idem/first/c8', 'sqlite-normal/idem/first/c64'],
    },
    {
      label: 'PostgreSQL floor (autocommit INSERT)',
      ids: ['pg/floor/first/c1', 'pg/floor/first/c8', 'pg/floor/first/c64'],
    },
    { label: 'Idem PostgreSQL', ids: ['pg/idem/first/c1', 'pg/idem/first/c8', 'pg/idem/first/c64'] },
  ];
  const byId = new Map(rows.map((row) => [row.id, row.measurement?.opsPerSec]));
  const colors = ['#90caf9', '#1e88e5', '#0d47a1'];
  const barH = 7;
  const groupH = barH * 3 + 10;
  const top2 = panel1Height + 60;
  const opsScale = logScale(100, 1_000_000, x0, x1);
  parts.push(
    `<text x="16" y="${panel1Height + 20}" font-size="16" font-weight="600" ${FONT}>First executions per second (log scale)</text>`,
  );
  ['1 in flight', '8 in flight', '64 in flight'].forEach((name, i) => {
    parts.push(
      `<rect x="${16 + i * 120}" y="${panel1Height + 32}" width="12" height="12" fill="${colors[i]}"/>`,
    );
    parts.push(`<text x="${32 + i * 120}" y="${panel1Height + 43}" font-size="12" ${FONT}>${name}</text>`);
  });
  for (const tick of [100, 1000, 10_000, 100_000, 1_000_000]) {
    const x = opsScale(tick);
    parts.push(
      `<line x1="${x}" y1="${top2 - 6}" x2="${x}" y2="${top2 + series.length * groupH}" stroke="#e0e0e0"/>`,
    );
    parts.push(
      `<text x="${x}" y="${top2 + series.length * groupH + 16}" font-size="11" text-anchor="middle" fill="#555" ${FONT}>${fmtOps(tick)}</text>`,
    );
  }
  series.forEach((s, i) => {
    const y = top2 + i * groupH;
    parts.push(
      `<text x="${labelWidth}" y="${y + 14}" font-size="12" text-anchor="end" ${FONT}>${esc(s.label)}</text>`,
    );
    s.ids.forEach((rowId, j) => {
      const ops = rowId === '' ? undefined : byId.get(rowId);
      if (ops === undefined || !Number.isFinite(ops)) return;
      const by = y + j * barH;
      const bx = opsScale(ops);
      parts.push(
        `<rect x="${x0}" y="${by}" width="${Math.max(1, bx - x0)}" height="${barH - 1}" fill="${colors[j]}"/>`,
      );
      parts.push(
        `<text x="${bx + 4}" y="${by + barH - 1}" font-size="9" fill="#333" ${FONT}>${fmtOps(ops)}</text>`,
      );
    });
  });
  const height = top2 + series.length * groupH + 30;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
