import { describe, expect, it } from 'vitest';
import { BatchSizer, pauseAfterBatch } from '../../src/core/batch-sizer.js';

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
