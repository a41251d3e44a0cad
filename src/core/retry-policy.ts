/**
 * One retry layer's policy: a total deadline, per-attempt timeouts capped by what remains, a maximum
 * attempt count and full-jitter exponential backoff. All durations in ms on a monotonic clock.
 * Defaults are policy, not MCP defaults.
 */
export interface RetryPolicy {
  /** Total budget from the first attempt's start. Default 30 s. */
  readonly totalMs: number;
  /** Cap for one attempt. Default 8 s. */
  readonly attemptTimeoutMs: number;
  /** Attempts including the first. Default 3. */
  readonly maxAttempts: number;
  /** First backoff ceiling. Default 200 ms. */
  readonly baseDelayMs: number;
  /** Backoff ceiling. Default 5 s. */
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  totalMs: 30_000,
  attemptTimeoutMs: 8_000,
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
});

export type RetryPlan =
  | { readonly retry: true; readonly delayMs: number }
  | {
      readonly retry: false;
      readonly reason: 'attempts_exhausted' | 'deadline_exhausted' | 'retry_after_beyond_deadline';
    };

/**
 * After `attemptsMade` failed attempts with `elapsedMs` spent: wait how long, or stop. A server's
 * `retryAfterMs` is honoured when it fits the remaining budget and refused (stop) when it does not.
 */
export function planRetry(
  policy: RetryPolicy,
  attemptsMade: number,
  elapsedMs: number,
  random: () => number,
  retryAfterMs?: number,
): RetryPlan {
  if (attemptsMade >= policy.maxAttempts) return { retry: false, reason: 'attempts_exhausted' };
  const remaining = policy.totalMs - elapsedMs;
  if (remaining <= 0) return { retry: false, reason: 'deadline_exhausted' };
  if (retryAfterMs !== undefined) {
    return retryAfterMs < remaining
      ? { retry: true, delayMs: retryAfterMs }
      : { retry: false, reason: 'retry_after_beyond_deadline' };
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attemptsMade - 1));
  const delayMs = Math.floor(random() * ceiling);
  if (delayMs >= remaining) return { retry: false, reason: 'deadline_exhausted' };
  return { retry: true, delayMs };
}

/** The timeout for the next attempt: the cap, or what is left of the budget if that is less. */
export function attemptTimeout(policy: RetryPolicy, elapsedMs: number): number {
  return Math.max(0, Math.min(policy.attemptTimeoutMs, policy.totalMs - elapsedMs));
}
