import { profiled } from './cpu-profile.js';
import { closedLoop, collectGarbage, medianOf, type Measurement, type Op } from './measure.js';
import type { RowResult, SuiteContext } from './types.js';

export type RowSpec = Omit<RowResult, 'measurement' | 'skipped'>;

/** A row ready to be measured: what one call does, and hooks around each repetition. */
export interface PlannedRow {
  readonly spec: RowSpec;
  readonly op: Op;
  /** Runs before each repetition (take a lock, reset a table...). */
  readonly before?: () => Promise<void> | void;
  /** Runs after each repetition (release, check that the row did what it claims). */
  readonly after?: (measurement: Measurement) => Promise<void> | void;
  /** Turns the kept measurement into the reported row (e.g. rounds into callers per second). */
  readonly finish?: (row: RowResult) => RowResult;
  readonly durationMs?: number;
  readonly maxOps?: number;
  /** Another process whose RSS counts for this row (a server). */
  readonly rssPid?: number;
  /** Whether this process's RSS counts too (default true). */
  readonly rssSelf?: boolean;
}

/** Whether the context asks for this row. */
export function wanted(context: SuiteContext, id: string): boolean {
  return context.only === undefined || context.only.test(id);
}

/**
 * Measures the rows round-robin: repetition 1 of every row, then repetition 2 of every row, and so
 * on, keeping each row's median repetition. On a machine whose load drifts, a row and its baseline
 * (planned next to each other) are then measured under the same conditions.
 */
export async function measureRows(
  context: SuiteContext,
  planned: readonly PlannedRow[],
): Promise<RowResult[]> {
  const selected = planned.filter((row) => wanted(context, row.spec.id));
  const runs = new Map<string, Measurement[]>();
  for (let rep = 0; rep < context.reps; rep += 1) {
    for (const row of selected) {
      await row.before?.();
      collectGarbage();
      const measurement = await maybeProfiled(context, row.spec.id, () =>
        closedLoop(row.op, {
          concurrency: row.spec.concurrency,
          durationMs: row.durationMs ?? context.durationMs,
          warmupMs: context.warmupMs,
          ...(row.maxOps === undefined ? {} : { maxOps: row.maxOps }),
          ...(row.rssPid === undefined ? {} : { rssPid: row.rssPid }),
          ...(row.rssSelf === undefined ? {} : { rssSelf: row.rssSelf }),
        }),
      );
      await row.after?.(measurement);
      runs.set(row.spec.id, [...(runs.get(row.spec.id) ?? []), measurement]);
    }
  }
  return selected.map((row) => {
    const measurement = medianOf(runs.get(row.spec.id) ?? []);
    const result = (row.finish ?? ((r: RowResult) => r))({ ...row.spec, measurement });
    logRow(context, result);
    return result;
  });
}

/** Runs `body` under the CPU profiler when the context asks for a profile of row `id`. */
export function maybeProfiled<T>(context: SuiteContext, id: string, body: () => Promise<T>): Promise<T> {
  if (context.profileRow !== id || context.profileOut === undefined) return body();
  return profiled(context.profileOut, body);
}

export function logRow(context: SuiteContext, row: RowResult): void {
  const m = row.measurement;
  if (m === undefined) {
    context.log(`${row.id.padEnd(46)} skipped: ${row.skipped ?? 'not measured'}`);
    return;
  }
  context.log(
    `${row.id.padEnd(46)} ${fmt(m.opsPerSec).padStart(9)} ops/s  p50 ${fmt(m.p50Us)} us  p99 ${fmt(m.p99Us)} us  rss ${fmt(m.peakRssMb)} MB${m.errors > 0 ? `  errors ${m.errors}` : ''}`,
  );
}

export function skippedRow(spec: RowSpec, reason: string): RowResult {
  return { ...spec, skipped: reason };
}

function fmt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-';
}
