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
  /**
   * No attempt is started with less than this left of the budget (default `MIN_ATTEMPT_MS`, never
   * more than `attemptTimeoutMs`): it could only time out, and an attempt that times out may have
   * been applied, which turns a clean failure into an unknown outcome.
   */
  readonly minAttemptMs?: number;
}

/** Default least budget an attempt needs to be worth starting, ms. */
export const MIN_ATTEMPT_MS = 100;

/** The least budget an attempt under `policy` needs to be worth starting. */
export function minAttempt(policy: RetryPolicy): number {
  return Math.min(policy.minAttemptMs ?? MIN_ATTEMPT_MS, policy.attemptTimeoutMs);
}

/**
 * The policy a durable operation follows when it names none: 30 s in all, 8 s an attempt, 3
 * attempts, backoff from 200 ms up to 5 s. Frozen.
 */
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

/** How a retry layer counts what it has done, when not every attempt counts against the cap. */
export interface RetryCount {
  /**
   * The attempts that count against `maxAttempts`; default all `attemptsMade`. A layer that can
   * prove an attempt never reached the other side (its connection was refused) leaves it out: such
   * attempts are bounded by the deadline alone.
   */
  readonly countedAttempts?: number;
  /**
   * The least backoff, ms; default 0. Full jitter may draw a wait near 0, which is harmless after a
   * slow failure but would spin on a refusal that fails at once (`baseDelayMs` suits it).
   */
  readonly minDelayMs?: number;
  /**
   * True: a wait drawn beyond what the budget allows is shortened so that one more attempt still
   * starts in time, instead of stopping early with budget left (for retries that cost the other
   * side nothing, such as refused connections). Default false.
   */
  readonly fillBudget?: boolean;
}

/**
 * After `attemptsMade` failed attempts with `elapsedMs` spent: wait how long, or stop. A retry is
 * planned only if, after its wait, at least `minAttempt(policy)` of the budget is left for it. A
 * server's `retryAfterMs` is honoured when it fits the remaining budget and refused (stop) when it
 * does not. The backoff grows with every attempt made; the cap applies to `count.countedAttempts`.
 */
export function planRetry(
  policy: RetryPolicy,
  attemptsMade: number,
  elapsedMs: number,
  random: () => number,
  retryAfterMs?: number,
  count: RetryCount = {},
): RetryPlan {
  if ((count.countedAttempts ?? attemptsMade) >= policy.maxAttempts)
    return { retry: false, reason: 'attempts_exhausted' };
  // What a retry may wait and still leave its attempt enough of the budget.
  const waitable = policy.totalMs - elapsedMs - minAttempt(policy);
  if (waitable < 0) return { retry: false, reason: 'deadline_exhausted' };
  if (retryAfterMs !== undefined) {
    return retryAfterMs <= waitable
      ? { retry: true, delayMs: retryAfterMs }
      : { retry: false, reason: 'retry_after_beyond_deadline' };
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attemptsMade - 1));
  // The floor never ends a budget that still has room for an attempt: it yields to what is left.
  const delayMs = Math.max(Math.floor(random() * ceiling), Math.min(count.minDelayMs ?? 0, waitable));
  if (delayMs > waitable)
    return count.fillBudget === true
      ? { retry: true, delayMs: waitable }
      : { retry: false, reason: 'deadline_exhausted' };
  return { retry: true, delayMs };
}

/** The timeout for the next attempt: the cap, or what is left of the budget if that is less. */
export function attemptTimeout(policy: RetryPolicy, elapsedMs: number): number {
  return Math.max(0, Math.min(policy.attemptTimeoutMs, policy.totalMs - elapsedMs));
}
