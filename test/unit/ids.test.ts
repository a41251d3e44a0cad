import { describe, expect, it } from 'vitest';
import { newAttemptId, newOperationId, timeOrderedHex } from '../../packages/idem/src/core/ids.js';

describe('ids', () => {
  it('are op_/att_ and 32 hex digits', () => {
    expect(newOperationId(1_700_000_000_000)).toMatch(/^op_[0-9a-f]{32}$/);
    expect(newAttemptId(1_700_000_000_000)).toMatch(/^att_[0-9a-f]{32}$/);
  });

  it('start with the creation time, so later ids sort later', () => {
    const t = 1_764_460_800_123;
    expect(timeOrderedHex(t).slice(0, 12)).toBe(t.toString(16).padStart(12, '0'));
    const ids = [t, t + 1, t + 1000, t + 86_400_000].map((ms) => newOperationId(ms));
    expect([...ids].sort()).toEqual(ids);
    // Each id carries its own time, whatever came before it (the last one formatted is reused).
    for (const ms of [t + 5, t, t + 5, 0, t]) {
      expect(timeOrderedHex(ms).slice(0, 12)).toBe(ms.toString(16).padStart(12, '0'));
    }
  });

  it('carry 80 random bits after the time: no two of 10,000 ids of one millisecond collide', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => timeOrderedHex(42)));
    expect(ids.size).toBe(10_000);
    const tails = [...ids].map((id) => id.slice(12));
    // Every hex digit shows up in every random position: none is fixed (no version/variant digit).
    for (let position = 0; position < 20; position += 1) {
      expect(new Set(tails.map((tail) => tail[position])).size).toBe(16);
    }
  });
});
