import { RssSampler, summarize, type Measurement, type Op } from './measure.js';

/** A background job that runs until done or aborted, and can be started again where it stopped. */
export type Resumable<T> = (signal: AbortSignal) => Promise<{ done: boolean; result: T }>;

export interface Alternated<T> {
  /** The op's calls while the job was paused. */
  readonly without: Measurement;
  /** The op's calls while the job ran. */
  readonly during: Measurement;
  /** Each run of the job, in order. */
  readonly results: T[];
  /** Wall time with the job running, seconds. */
  readonly jobSeconds: number;
  /** Whether the job finished (false: stopped at `maxJobMs`). */
  readonly done: boolean;
}

/**
 * Measures `op` (one caller) with and without a background job, in alternating phases of
 * `phaseMs`: off, on, off, on, … until the job is done, or until it has run `maxJobMs` in all. The
 * two measurements share the same minutes of the machine, so a change of its speed (a noisy
 * neighbour, the disk) weighs on both alike instead of on whichever ran second. A call counts in a
 * phase only if it starts and ends in it.
 */
export async function alternate<T>(
  op: Op,
  job: Resumable<T>,
  phaseMs: number,
  maxJobMs = Number.POSITIVE_INFINITY,
): Promise<Alternated<T>> {
  const off: number[] = [];
  const on: number[] = [];
  let offMs = 0;
  let onMs = 0;
  let phase = 0; // even: job paused; odd: job running
  let finished = false; // the job is done
  let stopped = false; // no more phases
  const results: T[] = [];
  const rss = new RssSampler();
  const timer = setInterval(() => rss.sample(), 20);

  const caller = (async () => {
    let seq = 0;
    while (!stopped) {
      const started = phase;
      const t0 = performance.now();
      await op(0, seq++);
      const t1 = performance.now();
      if (phase === started) (started % 2 === 0 ? off : on).push((t1 - t0) * 1000);
    }
  })();

  try {
    while (!finished && onMs < maxJobMs) {
      // Off: the caller alone.
      const offStart = performance.now();
      await new Promise((resolve) => setTimeout(resolve, phaseMs));
      offMs += performance.now() - offStart;
      phase += 1;
      // On: the job runs for a phase, then is aborted (it stops between two of its steps).
      const onStart = performance.now();
      const controller = new AbortController();
      const pause = setTimeout(() => controller.abort(), phaseMs);
      try {
        const run = await job(controller.signal);
        results.push(run.result);
        finished = run.done;
      } finally {
        clearTimeout(pause);
      }
      onMs += performance.now() - onStart;
      phase += 1;
    }
    stopped = true;
    await caller;
  } finally {
    stopped = true;
    clearInterval(timer);
  }
  rss.sample();
  return {
    without: summarize(Float64Array.from(off), offMs / 1000, 0, rss.peakMb),
    during: summarize(Float64Array.from(on), onMs / 1000, 0, rss.peakMb),
    results,
    jobSeconds: onMs / 1000,
    done: finished,
  };
}

export interface OpenLoopAlternated<T> extends Alternated<T> {
  /** Calls started at `ratePerSec` that had not settled when the last phase ended (not counted). */
  readonly unsettled: number;
}

/**
 * Like `alternate`, but the calls arrive at a fixed rate whatever their latency (an open loop: a
 * call that waits does not delay the next one, as with independent clients), so the job's effect
 * on their queueing shows in their latency. Calls are started on a timer, late ones at once to
 * catch up; at most `maxInFlight` are outstanding (the rest are skipped and counted as errors).
 */
export async function alternateOpenLoop<T>(
  op: Op,
  ratePerSec: number,
  job: Resumable<T>,
  phaseMs: number,
  maxJobMs = Number.POSITIVE_INFINITY,
  maxInFlight = 256,
): Promise<OpenLoopAlternated<T>> {
  const off: number[] = [];
  const on: number[] = [];
  let offMs = 0;
  let onMs = 0;
  let phase = 0;
  let finished = false;
  let inFlight = 0;
  let skipped = 0;
  let errors = 0;
  const results: T[] = [];
  const rss = new RssSampler();
  const sampler = setInterval(() => rss.sample(), 20);
  const calls = new Set<Promise<void>>();

  const startedAt = performance.now();
  let launched = 0;
  const launch = () => {
    const due = Math.floor(((performance.now() - startedAt) * ratePerSec) / 1000);
    while (launched < due) {
      const seq = launched++;
      if (inFlight >= maxInFlight) {
        skipped += 1;
        continue;
      }
      inFlight += 1;
      const started = phase;
      const t0 = performance.now();
      const call = op(0, seq).then(
        () => {
          const t1 = performance.now();
          if (phase === started) (started % 2 === 0 ? off : on).push((t1 - t0) * 1000);
        },
        () => {
          errors += 1;
        },
      );
      const tracked = call.finally(() => {
        inFlight -= 1;
        calls.delete(tracked);
      });
      calls.add(tracked);
    }
  };
  const ticker = setInterval(launch, Math.max(1, Math.min(10, 1000 / ratePerSec)));

  try {
    while (!finished && onMs < maxJobMs) {
      const offStart = performance.now();
      await new Promise((resolve) => setTimeout(resolve, phaseMs));
      offMs += performance.now() - offStart;
      phase += 1;
      const onStart = performance.now();
      const controller = new AbortController();
      const pause = setTimeout(() => controller.abort(), phaseMs);
      try {
        const run = await job(controller.signal);
        results.push(run.result);
        finished = run.done;
      } finally {
        clearTimeout(pause);
      }
      onMs += performance.now() - onStart;
      phase += 1;
    }
  } finally {
    clearInterval(ticker);
    clearInterval(sampler);
  }
  const unsettled = inFlight;
  await Promise.all(calls);
  rss.sample();
  return {
    without: summarize(Float64Array.from(off), offMs / 1000, errors + skipped, rss.peakMb),
    during: summarize(Float64Array.from(on), onMs / 1000, errors + skipped, rss.peakMb),
    results,
    jobSeconds: onMs / 1000,
    done: finished,
    unsettled,
  };
}
