import type { Measurement } from './measure.js';

/** One line of the results table. */
export interface RowResult {
  /** Stable id, e.g. `sqlite-full/idem/first/c8`; targets and baselines refer to rows by it. */
  readonly id: string;
  /** Section of the table: engine and durability. */
  readonly group: string;
  /** What runs: a baseline, a peer, or Idem. */
  readonly system: string;
  readonly scenario: string;
  /** Calls in flight. */
  readonly concurrency: number;
  /** The row this one is compared with (measured in the same run). */
  readonly baseline?: string;
  /** What the ratio compares: throughput (higher is better) or a latency (lower is better). */
  readonly ratioOf?: 'ops' | 'p50' | 'p99';
  readonly measurement?: Measurement;
  /** Why the row was not measured. */
  readonly skipped?: string;
  readonly notes?: readonly string[];
  /** Scenario-specific figures (round trips per call, rows swept per second, table size...). */
  readonly extra?: Readonly<Record<string, number | string>>;
}

export interface SuiteContext {
  readonly quick: boolean;
  readonly durationMs: number;
  readonly warmupMs: number;
  /** Repetitions of each row; the median by throughput is kept. */
  readonly reps: number;
  /** A fresh directory for this suite's files. */
  readonly tmpDir: string;
  readonly pgUrl: string;
  /** Only rows whose id matches are measured (the others are left out). */
  readonly only: RegExp | undefined;
  /** Profile this row's measured window (V8 CPU profiler) into `profileOut`. */
  readonly profileRow?: string;
  readonly profileOut?: string;
  log(message: string): void;
}

export type Suite = (context: SuiteContext) => Promise<RowResult[]>;
