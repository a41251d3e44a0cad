import { describe, expect, it } from 'vitest';
import {
  BatchSizer,
  DEFAULT_SWEEP_BATCH_BUDGET_MS,
  MIN_SWEEP_BATCH_ROWS,
  pauseAfterBatch,
  SWEEP_BACKLOG_BUDGET_FACTOR,
  SweepPacer,
} from '../../packages/idem/src/core/batch-sizer.js';

describe('BatchSizer', () => {
  it('starts small and never exceeds max', () => {
    expect(new BatchSizer({ max: 500, budgetMs: 1 }).size).toBe(32);
    expect(new BatchSizer({ max: 10, budgetMs: 1 }).size).toBe(10);
    const sizer = new BatchSizer({ max: 100, budgetMs: 1 });
    for (let i = 0; i < 10; i += 1) sizer.record(sizer.size, 0);
    expect(sizer.size).toBe(100);
  });

  it('grows at most twofold per batch while batches are under budget', () => {
    const sizer = new BatchSizer({ max: 500, budgetMs: 2 });
    sizer.record(32, 0.1); // 3 µs a row: 640 would fit
    expect(sizer.size).toBe(64);
    sizer.record(64, 0.2);
    expect(sizer.size).toBe(128);
  });

  it('settles where a batch takes about the budget', () => {
    const sizer = new BatchSizer({ max: 500, budgetMs: 1 });
    for (let i = 0; i < 20; i += 1) sizer.record(sizer.size, sizer.size * 0.01); // 10 µs a row
    expect(sizer.size).toBe(100);
  });

  it('shrinks at most by half per batch when a batch runs over', () => {
    const sizer = new BatchSizer({ max: 500, budgetMs: 1, start: 400 });
    sizer.record(400, 40); // 100 µs a row: 10 would fit
    expect(sizer.size).toBe(200);
    sizer.record(200, 20);
    expect(sizer.size).toBe(100);
    for (let i = 0; i < 10; i += 1) sizer.record(sizer.size, sizer.size * 0.1);
    expect(sizer.size).toBe(10);
  });

  it('keeps at least one row and ignores empty batches', () => {
    const sizer = new BatchSizer({ max: 50, budgetMs: 1, start: 1 });
    sizer.record(1, 100);
    expect(sizer.size).toBe(1);
    sizer.record(0, 0);
    expect(sizer.size).toBe(1);
  });

  it('rejects a bad max or budget', () => {
    expect(() => new BatchSizer({ max: 0, budgetMs: 1 })).toThrow(RangeError);
    expect(() => new BatchSizer({ max: 5, budgetMs: 0 })).toThrow(RangeError);
  });
});

describe('pauseAfterBatch', () => {
  it('waits so that batches fill at most maxDuty of the time', () => {
    expect(pauseAfterBatch(2, 0.5)).toBe(2);
    expect(pauseAfterBatch(2, 0.25)).toBe(6);
    expect(pauseAfterBatch(2, 1)).toBe(0);
    expect(pauseAfterBatch(-1, 0.5)).toBe(0); // a clock that went back waits for nothing
  });

  it('refuses a duty outside (0, 1]', () => {
    for (const duty of [0, -0.5, 1.5, Number.NaN]) expect(() => pauseAfterBatch(1, duty)).toThrow(RangeError);
  });
});

describe('BatchSizer min', () => {
  it('never shrinks below min, however slow a row is (capped at max)', () => {
    const sizer = new BatchSizer({ max: 500, budgetMs: 0.25, min: 16 });
    for (let i = 0; i < 10; i += 1) sizer.record(sizer.size, 50);
    expect(sizer.size).toBe(16);
    expect(new BatchSizer({ max: 10, budgetMs: 1, min: 16 }).size).toBe(10);
  });
});

describe('SweepPacer', () => {
  const full = (pacer: SweepPacer, heldMs: number, callersWaiting = 0) =>
    pacer.record({ rows: pacer.size, full: true, heldMs, callersWaiting });

  it('pauses for the time a batch held the lock, scaled by maxDuty, never for its wait behind callers', () => {
    const pacer = new SweepPacer({ batchSize: 500, maxDuty: 0.5 });
    // The batch waited 40 ms behind callers' commits, but held the lock 0.25 ms: it pauses 0.25 ms.
    expect(full(pacer, 0.25, 3)).toBe(0.25);
    expect(
      new SweepPacer({ batchSize: 500, maxDuty: 0.25 }).record({
        rows: 32,
        full: true,
        heldMs: 2,
        callersWaiting: 0,
      }),
    ).toBe(6);
    expect(
      new SweepPacer({ batchSize: 500, maxDuty: 1 }).record({
        rows: 32,
        full: true,
        heldMs: 2,
        callersWaiting: 0,
      }),
    ).toBe(0);
  });

  it('keeps at least MIN_SWEEP_BATCH_ROWS rows a batch on a slow machine', () => {
    const pacer = new SweepPacer({ batchSize: 500 });
    for (let i = 0; i < 20; i += 1) full(pacer, 20, 1); // 20 ms a batch: far over 0.25 ms
    expect(pacer.size).toBe(MIN_SWEEP_BATCH_ROWS);
  });

  it('stretches its budget while a backlog is left and no caller waits, up to the factor', () => {
    const pacer = new SweepPacer({ batchSize: 5000 });
    expect(pacer.budgetMs).toBe(DEFAULT_SWEEP_BATCH_BUDGET_MS);
    const perRowMs = 0.005; // 50 rows fit the default budget
    const sizes: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      full(pacer, pacer.size * perRowMs);
      sizes.push(pacer.size);
    }
    expect(pacer.budgetMs).toBe(DEFAULT_SWEEP_BATCH_BUDGET_MS * SWEEP_BACKLOG_BUDGET_FACTOR);
    // Settles where a batch takes the stretched budget: 4 x 50 rows.
    expect(sizes.at(-1)).toBe(50 * SWEEP_BACKLOG_BUDGET_FACTOR);
  });

  it('goes back to the short budget as soon as a caller waits, or when the backlog is gone', () => {
    const perRowMs = 0.005;
    const pacer = new SweepPacer({ batchSize: 5000 });
    for (let i = 0; i < 12; i += 1) full(pacer, pacer.size * perRowMs);
    expect(pacer.size).toBe(200);
    full(pacer, pacer.size * perRowMs, 1);
    expect(pacer.budgetMs).toBe(DEFAULT_SWEEP_BATCH_BUDGET_MS);
    expect(pacer.size).toBe(100); // at most halved per batch
    full(pacer, pacer.size * perRowMs, 1);
    expect(pacer.size).toBe(50); // the short budget
    for (let i = 0; i < 12; i += 1) full(pacer, pacer.size * perRowMs);
    pacer.record({ rows: 3, full: false, heldMs: 3 * perRowMs, callersWaiting: 0 });
    expect(pacer.budgetMs).toBe(DEFAULT_SWEEP_BATCH_BUDGET_MS);
  });

  it('refuses a duty outside (0, 1]', () => {
    expect(() => new SweepPacer({ batchSize: 10, maxDuty: 0 })).toThrow(RangeError);
  });
});
