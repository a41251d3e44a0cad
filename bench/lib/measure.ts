import { readFileSync } from 'node:fs';

/** One measured configuration, as the worker reports it to the orchestrator. */
export interface Measurement {
  /** Operations completed in the measured window (warm-up excluded). */
  readonly ops: number;
  readonly seconds: number;
  readonly opsPerSec: number;
  /** Per-call latency in microseconds, from the call's start to its settlement. */
  readonly p50Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
  /** Peak resident set size of the process doing the work during the window, MiB. */
  readonly peakRssMb: number;
  readonly errors: number;
}

export interface LoopOptions {
  /** Calls in flight at once (closed loop: each lane starts its next call when one settles). */
  readonly concurrency: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  /** Hard bound on measured calls, whatever the duration. */
  readonly maxOps?: number;
  /** Sampled for peak RSS in addition to this process (a server child), by pid. */
  readonly rssPid?: number;
  /** Whether this process counts for peak RSS (default true; false: only `rssPid`). */
  readonly rssSelf?: boolean;
  /** Ends the window early once this returns true (checked before each call). */
  readonly until?: () => boolean;
}

/** Runs one call; `lane` is 0..concurrency-1, `seq` counts calls of this loop from 0. */
export type Op = (lane: number, seq: number) => Promise<void>;

const DEFAULT_MAX_OPS = 5_000_000;

/**
 * A closed loop of `concurrency` lanes for `warmupMs` + `durationMs`: latency of every call in the
 * measured window, throughput over it, and peak RSS. A call that throws counts as an error (and is
 * not timed). Bounded by time and by `maxOps`.
 */
export async function closedLoop(op: Op, options: LoopOptions): Promise<Measurement> {
  const maxOps = options.maxOps ?? DEFAULT_MAX_OPS;
  const measureStart = performance.now() + options.warmupMs;
  const measureEnd = measureStart + options.durationMs;
  let seq = 0;
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let lastCounted = measureStart;
  let errors = 0;
  let rssReset = false;
  let stoppedAt: number | undefined;
  const rss = new RssSampler(options.rssPid, options.rssSelf ?? true);

  const lane = async (id: number) => {
    for (;;) {
      const now = performance.now();
      if (now >= measureEnd || count >= maxOps) return;
      if (stoppedAt !== undefined) return;
      if (options.until?.() === true) {
        stoppedAt = now;
        return;
      }
      if (!rssReset && now >= measureStart) {
        rssReset = true;
        rss.reset();
      }
      const t0 = now;
      try {
        await op(id, seq++);
      } catch (error) {
        errors += 1;
        if (errors > 1000) throw error;
        continue;
      }
      const t1 = performance.now();
      // A call counts when it completes inside the window.
      if (t1 >= measureStart && t1 <= (stoppedAt ?? measureEnd) && count < maxOps) {
        if (count === latencies.length) {
          const bigger = new Float64Array(latencies.length * 2);
          bigger.set(latencies);
          latencies = bigger;
        }
        latencies[count++] = (t1 - t0) * 1000;
        lastCounted = t1;
        if ((count & 255) === 0) rss.sample();
      }
    }
  };
  const timer = setInterval(() => rss.sample(), 20);
  try {
    await Promise.all(Array.from({ length: options.concurrency }, (_, i) => lane(i)));
  } finally {
    clearInterval(timer);
  }
  rss.sample();
  const windowMs =
    stoppedAt !== undefined
      ? stoppedAt - measureStart
      : count >= maxOps
        ? lastCounted - measureStart
        : options.durationMs;
  return summarize(latencies.subarray(0, count), windowMs / 1000, errors, rss.peakMb);
}

export function summarize(
  latenciesUs: Float64Array,
  seconds: number,
  errors: number,
  peakRssMb: number,
): Measurement {
  const sorted = Float64Array.from(latenciesUs).sort();
  const pick = (q: number) =>
    sorted.length === 0
      ? Number.NaN
      : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);
  return {
    ops: sorted.length,
    seconds,
    opsPerSec: sorted.length / seconds,
    p50Us: pick(0.5),
    p99Us: pick(0.99),
    maxUs: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
    peakRssMb,
    errors,
  };
}

/** Peak RSS of this process (and optionally another one, added) between resets. */
export class RssSampler {
  readonly #pid: number | undefined;
  readonly #self: boolean;
  #peak = 0;

  constructor(pid?: number, self = true) {
    this.#pid = pid;
    this.#self = self;
    this.reset();
  }

  reset(): void {
    this.#peak = 0;
    this.sample();
  }

  sample(): void {
    const own = this.#self ? process.memoryUsage.rss() : 0;
    const other = this.#pid === undefined ? 0 : rssOfPid(this.#pid);
    this.#peak = Math.max(this.#peak, own + other);
  }

  get peakMb(): number {
    return this.#peak / (1024 * 1024);
  }
}

/** Resident set of another process, bytes (0 if it cannot be read). */
export function rssOfPid(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return match === null ? 0 : Number(match[1]) * 1024;
  } catch {
    return 0;
  }
}

/** The median of `values`: the middle one, or the mean of the two middle ones of an even count. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The median repetition by throughput (its latencies and RSS come with it). */
export function medianOf(runs: readonly Measurement[]): Measurement {
  const sorted = [...runs].sort((a, b) => a.opsPerSec - b.opsPerSec);
  return sorted[Math.floor((sorted.length - 1) / 2)] as Measurement;
}

export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}
