/** Rows under a header in aligned columns, or the header and `empty` when there are no rows. */
export function textTable(header: string[], rows: string[][], empty: string): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n${rows.length === 0 ? `${empty}\n` : ''}`;
}
