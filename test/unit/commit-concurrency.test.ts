import { describe, expect, it } from 'vitest';
import { CommitConcurrency } from '../../packages/idem/src/core/commit-concurrency.js';

/** Records `sizes` in order; returns the indexes at which `concurrent` changed. */
function flips(gauge: CommitConcurrency, sizes: number[]): number[] {
  return sizes.flatMap((size, i) => (gauge.record(size) ? [i] : []));
}

describe('CommitConcurrency', () => {
  it('stays lone while every commit carries one write', () => {
    const gauge = new CommitConcurrency();
    expect(flips(gauge, Array<number>(1000).fill(1))).toEqual([]);
    expect(gauge.concurrent).toBe(false);
  });

  it('ignores a chance overlap of two callers now and then', () => {
    const gauge = new CommitConcurrency();
    const sizes = Array.from({ length: 1000 }, (_, i) => (i % 10 === 0 ? 2 : 1));
    expect(flips(gauge, sizes)).toEqual([]);
  });

  it('notices callers sharing commits within two batches', () => {
    const gauge = new CommitConcurrency();
    expect(flips(gauge, [8, 8, 8])).toEqual([1]);
    expect(gauge.concurrent).toBe(true);
  });

  it('turns lone again only after a run of single-write commits, and reports each change once', () => {
    const gauge = new CommitConcurrency();
    flips(gauge, Array<number>(100).fill(8));
    const back = flips(gauge, Array<number>(200).fill(1));
    expect(back).toHaveLength(1);
    // Neither at once (a lull between bursts) nor never: a few dozen lone commits.
    expect(back[0]).toBeGreaterThan(30);
    expect(back[0]).toBeLessThan(100);
    expect(gauge.concurrent).toBe(false);
  });

  it('ignores a report of no writes', () => {
    const gauge = new CommitConcurrency();
    expect(gauge.record(0)).toBe(false);
    expect(gauge.record(Number.NaN)).toBe(false);
    expect(flips(gauge, [8, 8])).toEqual([1]);
  });
});
