import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/operations/index.js';

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1);
  it('reads delta-seconds and HTTP-dates; the past is 0; junk is undefined', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter(new Date(now + 1_500).toUTCString(), now)).toBe(1_000); // second precision
    expect(parseRetryAfter(new Date(now - 60_000).toUTCString(), now)).toBe(0);
    for (const junk of [null, '', '-1', '1.5', 'soon', '12abc'])
      expect(parseRetryAfter(junk, now), String(junk)).toBeUndefined();
  });
});
