import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  MIN_ATTEMPT_MS,
  minAttempt,
  planRetry,
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

  it('waits at least minDelayMs, unless less than that is left before the last attempt', () => {
    expect(planRetry(policy, 1, 0, () => 0, undefined, { minDelayMs: 200 })).toEqual({
      retry: true,
      delayMs: 200,
    });
    // 9,850 ms spent of 10 s: 50 ms may be waited; the floor yields to it.
    expect(planRetry(policy, 1, 9_850, () => 0, undefined, { minDelayMs: 200 })).toEqual({
      retry: true,
      delayMs: 50,
    });
  });

  it('with fillBudget, shortens a wait drawn beyond the budget to one last attempt', () => {
    // 9,000 ms spent: 900 ms may be waited; the drawn 2,500 ms would end the budget unused.
    const counted = { countedAttempts: 1 };
    expect(planRetry(policy, 7, 9_000, half, undefined, counted)).toEqual({
      retry: false,
      reason: 'deadline_exhausted',
    });
    expect(planRetry(policy, 7, 9_000, half, undefined, { ...counted, fillBudget: true })).toEqual({
      retry: true,
      delayMs: 900,
    });
    // Nothing left for an attempt: stop all the same.
    expect(planRetry(policy, 7, 9_950, half, undefined, { ...counted, fillBudget: true })).toEqual({
      retry: false,
      reason: 'deadline_exhausted',
    });
  });
});

describe('minAttempt', () => {
  it('defaults to MIN_ATTEMPT_MS, follows the policy, and never exceeds the attempt timeout', () => {
    expect(minAttempt(policy)).toBe(MIN_ATTEMPT_MS);
    expect(minAttempt({ ...policy, minAttemptMs: 20 })).toBe(20);
    expect(minAttempt({ ...policy, attemptTimeoutMs: 50 })).toBe(50);
  });
});
