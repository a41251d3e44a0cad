import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../packages/idem/src/core/duration.js';

describe('parseDuration', () => {
  it('reads an integer and a unit', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('5s')).toBe(5_000);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('24h')).toBe(86_400_000);
    expect(parseDuration('30d')).toBe(2_592_000_000);
  });

  it('refuses a bare number instead of reading it as milliseconds, and lists the accepted forms', () => {
    for (const text of ['24', '5', '0']) {
      expect(() => parseDuration(text)).toThrow(
        expect.objectContaining({
          code: 'invalid_argument',
          message: `"${text}" has no unit; a duration is an integer and a unit (500ms, 5s, 2m, 24h, 30d)`,
        }),
      );
    }
  });

  it('refuses what is not a duration, and zero', () => {
    for (const text of ['', '5x', '1.5h', '-1s', 's', '24 h']) {
      expect(() => parseDuration(text)).toThrow(/not a duration: .*\(500ms, 5s, 2m, 24h, 30d\)/);
    }
    expect(() => parseDuration('0s')).toThrow(/out of range/);
  });
});
