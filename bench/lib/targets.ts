import type { Measurement } from './measure.js';
import type { RowResult } from './types.js';

export type Metric = 'ops' | 'p50' | 'p99';

/** A target from issue 6: `numerator.metric / denominator.metric` compared with a threshold. */
export interface Target {
  readonly id: string;
  readonly label: string;
  readonly numerator: string;
  readonly denominator: string;
  readonly metric: Metric;
  readonly op: '>=' | '<=';
  readonly threshold: number;
  /** The row whose CPU profile explains a miss. */
  readonly profileRow?: string;
  /** Not from the issue: a check this bench adds. */
  readonly own?: boolean;
}

export interface TargetResult extends Target {
  readonly ratio: number | undefined;
  readonly met: boolean | undefined;
  /** Why the ratio could not be computed. */
  readonly missing?: string;
}

export function metricOf(m: Measurement, metric: Metric): number {
  return metric === 'ops' ? m.opsPerSec : metric === 'p50' ? m.p50Us : m.p99Us;
}

/** The targets; `receiptsSize` is the largest prefilled size of this run (5M, or 100k with --quick). */
export function targets(receiptsSize: string): Target[] {
  return [
    {
      id: 'first-full-c1',
      label: 'SQLite FULL, first execution, 1 caller: Idem vs the floor',
      numerator: 'sqlite-full/idem/first/c1',
      denominator: 'sqlite-full/floor/first/c1',
      metric: 'ops',
      op: '>=',
      threshold: 0.85,
      profileRow: 'sqlite-full/idem/first/c1',
    },
    {
      id: 'first-normal-c1',
      label: 'SQLite NORMAL, first execution, 1 caller: Idem vs the floor',
      numerator: 'sqlite-normal/idem/first/c1',
      denominator: 'sqlite-normal/floor/first/c1',
      metric: 'ops',
      op: '>=',
      threshold: 0.6,
      profileRow: 'sqlite-normal/idem/first/c1',
    },
    {
      id: 'group-commit-c64',
      label: "SQLite FULL, 64 in flight (group commit) vs the floor's 1-caller throughput",
      numerator: 'sqlite-full/idem/first/c64',
      denominator: 'sqlite-full/floor/first/c1',
      metric: 'ops',
      op: '>=',
      threshold: 3,
      profileRow: 'sqlite-full/idem/first/c64',
    },
    {
      id: 'replay-vs-first',
      label: "SQLite FULL, replay vs Idem's own first execution (1 caller)",
      numerator: 'sqlite-full/idem/replay/c1',
      denominator: 'sqlite-full/idem/first/c1',
      metric: 'ops',
      op: '>=',
      threshold: 5,
    },
    {
      id: 'replay-lock-free',
      label: 'SQLite FULL, replay while another connection holds the write lock vs replay',
      numerator: 'sqlite-full/idem/replay-locked/c1',
      denominator: 'sqlite-full/idem/replay/c1',
      metric: 'ops',
      op: '>=',
      threshold: 0.8,
      own: true,
    },
    {
      id: 'powertools-first-c1',
      label: 'Equal durability, first execution, 1 caller: Idem vs Powertools + Redis',
      numerator: 'pt-aof/idem/first/c1',
      denominator: 'pt-aof/powertools/first/c1',
      metric: 'ops',
      op: '>=',
      threshold: 5,
      profileRow: 'pt-aof/powertools/first/c1',
    },
    {
      id: 'powertools-first-c8',
      label: 'Equal durability, first execution, 8 in flight: Idem vs Powertools + Redis',
      numerator: 'pt-aof/idem/first/c8',
      denominator: 'pt-aof/powertools/first/c8',
      metric: 'ops',
      op: '>=',
      threshold: 3,
    },
    {
      id: 'powertools-replay-c1',
      label: 'Equal durability, replay, 1 caller: Idem vs Powertools + Redis',
      numerator: 'pt-aof/idem/replay/c1',
      denominator: 'pt-aof/powertools/replay/c1',
      metric: 'ops',
      op: '>=',
      threshold: 5,
    },
    {
      id: 'postgres-first-c8',
      label: 'PostgreSQL, first execution, 8 in flight: Idem vs the bare insert transaction',
      numerator: 'pg/idem/first/c8',
      denominator: 'pg/floor-tx/first/c8',
      metric: 'ops',
      op: '>=',
      threshold: 1,
      profileRow: 'pg/idem/first/c8',
    },
    {
      id: 'postgres-replay-c8',
      label: "PostgreSQL, replay vs Idem's own first execution, 8 in flight",
      numerator: 'pg/idem/replay/c8',
      denominator: 'pg/idem/first/c8',
      metric: 'ops',
      op: '>=',
      threshold: 2,
    },
    {
      id: 'mcp-p50',
      label: 'MCP over Streamable HTTP, p50: create_note (Idem) vs create_note_plain',
      numerator: 'mcp/idem/first/c1',
      denominator: 'mcp/plain/first/c1',
      metric: 'p50',
      op: '<=',
      threshold: 1.15,
    },
    {
      id: 'receipts-p99-first',
      label: `p99 of a first execution with ${receiptsSize} receipts vs an empty table`,
      numerator: `receipts/idem/first/n${receiptsSize}`,
      denominator: 'receipts/idem/first/n0',
      metric: 'p99',
      op: '<=',
      threshold: 1.5,
    },
    {
      id: 'receipts-p99-replay',
      label: `p99 of a replay with ${receiptsSize} receipts vs an empty table`,
      numerator: `receipts/idem/replay/n${receiptsSize}`,
      denominator: 'receipts/idem/replay/n0',
      metric: 'p99',
      op: '<=',
      threshold: 1.5,
    },
    {
      id: 'sweep-p99',
      label: 'Writer p99 during a sweep (time-sized batches of at most 500 rows) vs without',
      numerator: 'sweep/idem/first/during-sweep-b500',
      denominator: 'sweep/idem/first/no-sweep-b500',
      metric: 'p99',
      op: '<=',
      threshold: 2,
      profileRow: 'sweep/idem/first/during-sweep-b500',
    },
    {
      id: 'sweep-load-rate',
      label: "Sweep rate beside writers at half the store's capacity vs the rate they create receipts",
      numerator: 'sweep-load/idem/sweep/during-writers',
      denominator: 'sweep-load/idem/writers/during-sweep',
      metric: 'ops',
      op: '>=',
      threshold: 1,
    },
    {
      id: 'sweep-load-p99',
      label: "Writers' p99 (half the store's capacity) during a sweep vs without",
      numerator: 'sweep-load/idem/writers/during-sweep',
      denominator: 'sweep-load/idem/writers/no-sweep',
      metric: 'p99',
      op: '<=',
      threshold: 1.5,
      profileRow: 'sweep-load/idem/writers/during-sweep',
    },
  ];
}

export function evaluate(list: readonly Target[], rows: readonly RowResult[]): TargetResult[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return list.map((target) => {
    const num = byId.get(target.numerator)?.measurement;
    const den = byId.get(target.denominator)?.measurement;
    if (num === undefined || den === undefined) {
      const absent = num === undefined ? target.numerator : target.denominator;
      const reason = byId.get(absent)?.skipped ?? `${absent} was not measured`;
      return { ...target, ratio: undefined, met: undefined, missing: reason };
    }
    const ratio = metricOf(num, target.metric) / metricOf(den, target.metric);
    const met = target.op === '>=' ? ratio >= target.threshold : ratio <= target.threshold;
    return { ...target, ratio, met };
  });
}

/** Each row's ratio against its own baseline row. */
export function rowRatio(row: RowResult, rows: readonly RowResult[]): number | undefined {
  if (row.baseline === undefined || row.measurement === undefined) return undefined;
  const base = rows.find((r) => r.id === row.baseline)?.measurement;
  if (base === undefined) return undefined;
  const metric = row.ratioOf ?? 'ops';
  return metricOf(row.measurement, metric) / metricOf(base, metric);
}
