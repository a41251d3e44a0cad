import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  MAX_REFUSED_DELAY_MS,
  MIN_ATTEMPT_MS,
  maxRefusedDelay,
  minAttempt,
  planRetry,
  retryPolicy,
  type RetryPolicy,
} from '../../packages/idem/src/core/retry-policy.js';

const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, totalMs: 10_000, maxAttempts: 5 };
const half = () => 0.5;

describe('planRetry', () => {
  it('waits a full-jitter share of the doubling ceiling', () => {
    expect(planRetry(policy, 1, 0, half)).toEqual({ retry: true, delayMs: 100 });
    expect(planRetry(policy, 2, 0, half)).toEqual({ retry: true, delayMs: 200 });
    expect(planRetry(policy, 3, 0, () => 0.999)).toEqual({ retry: true, delayMs: 799 });
  });

  it('stops after maxAttempts', () => {
    expect(planRetry(policy, 5, 0, half)).toEqual({ retry: false, reason: 'attempts_exhausted' });
  });

  it('plans no retry whose attempt would start with less than MIN_ATTEMPT_MS of the budget', () => {
    // 10 s budget, 9,750 ms spent: 250 ms left; a 100 ms wait leaves 150 ms, enough.
    expect(planRetry(policy, 1, 9_750, half)).toEqual({ retry: true, delayMs: 100 });
    // 9,850 ms spent: a 100 ms wait would leave 50 ms, less than MIN_ATTEMPT_MS.
    expect(planRetry(policy, 1, 9_850, half)).toEqual({ retry: false, reason: 'deadline_exhausted' });
    // Even no wait at all would leave too little.
    expect(planRetry(policy, 1, 10_000 - MIN_ATTEMPT_MS + 1, () => 0)).toEqual({
      retry: false,
      reason: 'deadline_exhausted',
    });
  });

  it("honours a server's Retry-After only when it leaves the attempt its least budget", () => {
    expect(planRetry(policy, 1, 9_000, half, 900)).toEqual({ retry: true, delayMs: 900 });
    expect(planRetry(policy, 1, 9_000, half, 901)).toEqual({
      retry: false,
      reason: 'retry_after_beyond_deadline',
    });
  });

  it('caps only the attempts counted against maxAttempts; the backoff grows with every attempt made', () => {
    // 7 attempts made, 2 of which count: a retry, with the ceiling of the 7th attempt (5 s cap).
    expect(planRetry(policy, 7, 0, half, undefined, { countedAttempts: 2 })).toEqual({
      retry: true,
      delayMs: 2_500,
    });
    expect(planRetry(policy, 7, 0, half, undefined, { countedAttempts: 5 })).toEqual({
      retry: false,
      reason: 'attempts_exhausted',
    });
  });

  it('after a refused connection: at least baseDelayMs, under a ceiling that stops at 1 s (maxRefusedDelayMs)', () => {
    const refused = { countedAttempts: 0, refused: true };
    // A draw of 0 still waits the base delay: a refusal fails at once, and must not spin.
    expect(planRetry(policy, 1, 0, () => 0, undefined, refused)).toEqual({ retry: true, delayMs: 200 });
    // The 20th refusal: the ceiling is 1 s (MAX_REFUSED_DELAY_MS), not the 5 s of maxDelayMs.
    expect(planRetry(policy, 20, 0, () => 0.999, undefined, refused)).toEqual({ retry: true, delayMs: 999 });
    expect(planRetry({ ...policy, maxRefusedDelayMs: 400 }, 20, 0, () => 0.999, undefined, refused)).toEqual({
      retry: true,
      delayMs: 399,
    });
    // Never above maxDelayMs, never below baseDelayMs.
    expect(planRetry({ ...policy, maxDelayMs: 300 }, 20, 0, () => 0.999, undefined, refused)).toEqual({
      retry: true,
      delayMs: 299,
    });
    expect(planRetry({ ...policy, maxRefusedDelayMs: 50 }, 20, 0, () => 0.999, undefined, refused)).toEqual({
      retry: true,
      delayMs: 200,
    });
    expect(maxRefusedDelay(DEFAULT_RETRY_POLICY)).toBe(MAX_REFUSED_DELAY_MS);
  });

  it('after a refused connection: the last try is planned minAttempt + pickupMs before the end', () => {
    const refused = { countedAttempts: 0, refused: true, pickupMs: 200 };
    // 10 s budget: the last try at 10,000 - 100 - 200 = 9,700 ms. From 9,000, a 999 ms draw ends there.
    expect(planRetry(policy, 20, 9_000, () => 0.999, undefined, refused)).toEqual({
      retry: true,
      delayMs: 700,
    });
    // From 9,500 ms: exactly the base delay is left before the last try; it is made.
    expect(planRetry(policy, 20, 9_500, () => 0.999, undefined, refused)).toEqual({
      retry: true,
      delayMs: 200,
    });
    // From 9,501 ms: less than the base delay before the last try: this attempt was the last.
    expect(planRetry(policy, 20, 9_501, () => 0, undefined, refused)).toEqual({
      retry: false,
      reason: 'deadline_exhausted',
    });
    // Without a pickup allowance the last try is 100 ms (minAttempt) before the end.
    const noPickup = { countedAttempts: 0, refused: true };
    expect(planRetry(policy, 20, 9_500, () => 0.999, undefined, noPickup)).toEqual({
      retry: true,
      delayMs: 400,
    });
    // The cap of attempts that may have reached the provider still stops it.
    expect(planRetry(policy, 20, 0, () => 0, undefined, { ...refused, countedAttempts: 5 })).toEqual({
      retry: false,
      reason: 'attempts_exhausted',
    });
  });

  it('never plans refused retries closer than baseDelayMs, and always one within (last - base, last]', () => {
    // Simulated: attempts that fail at once, each retry started exactly when planned.
    for (const draw of [0, 0.3, 0.77, 0.999]) {
      const starts: number[] = [];
      let at = 0;
      for (let made = 1; ; made += 1) {
        starts.push(at);
        const plan = planRetry(policy, made, at, () => draw, undefined, {
          countedAttempts: 0,
          refused: true,
          pickupMs: 200,
        });
        if (!plan.retry) break;
        at += plan.delayMs;
      }
      const last = starts[starts.length - 1] as number;
      expect(last).toBeLessThanOrEqual(9_700);
      expect(last).toBeGreaterThan(9_700 - 200);
      for (let i = 1; i < starts.length; i += 1) {
        const gap = (starts[i] as number) - (starts[i - 1] as number);
        expect(gap).toBeGreaterThanOrEqual(200);
        expect(gap).toBeLessThanOrEqual(1_000);
      }
    }
  });
});

describe('retryPolicy', () => {
  it('takes any part of a policy over DEFAULT_RETRY_POLICY', () => {
    expect(retryPolicy()).toEqual(DEFAULT_RETRY_POLICY);
    expect(retryPolicy({ totalMs: 60_000 })).toEqual({ ...DEFAULT_RETRY_POLICY, totalMs: 60_000 });
    expect(retryPolicy({ maxAttempts: 5, minAttemptMs: 20, totalMs: undefined })).toEqual({
      ...DEFAULT_RETRY_POLICY,
      maxAttempts: 5,
      minAttemptMs: 20,
    });
  });

  it('refuses a field that cannot be a policy, naming it', () => {
    expect(() => retryPolicy({ totalMs: 0 })).toThrow(
      /^RetryPolicy\.totalMs must be a positive number of ms$/,
    );
    expect(() => retryPolicy({ attemptTimeoutMs: Number.NaN })).toThrow(/RetryPolicy\.attemptTimeoutMs/);
    expect(() => retryPolicy({ maxAttempts: 0 })).toThrow(/RetryPolicy\.maxAttempts must be an integer/);
    expect(() => retryPolicy({ maxAttempts: 2.5 })).toThrow(RangeError);
    expect(() => retryPolicy({ baseDelayMs: -1 })).toThrow(/RetryPolicy\.baseDelayMs/);
    expect(() => retryPolicy({ maxRefusedDelayMs: Infinity })).toThrow(/RetryPolicy\.maxRefusedDelayMs/);
    expect(() => retryPolicy({ minAttemptMs: '5' as unknown as number })).toThrow(
      /RetryPolicy\.minAttemptMs/,
    );
  });
});

describe('minAttempt', () => {
  it('defaults to MIN_ATTEMPT_MS, follows the policy, and never exceeds the attempt timeout', () => {
    expect(minAttempt(policy)).toBe(MIN_ATTEMPT_MS);
    expect(minAttempt({ ...policy, minAttemptMs: 20 })).toBe(20);
    expect(minAttempt({ ...policy, attemptTimeoutMs: 50 })).toBe(50);
  });
});
