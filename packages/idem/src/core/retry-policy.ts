/**
 * One retry layer's policy: a total deadline, per-attempt timeouts capped by what remains, a maximum
 * attempt count and full-jitter exponential backoff. All durations in ms (a monotonic clock for the
 * agent-side client, the wall clock for durable operations, which outlive a process). Every option
 * that takes a policy takes any part of one (`Partial<RetryPolicy>`): a field left out is
 * `DEFAULT_RETRY_POLICY`'s (see `retryPolicy`). Defaults are policy, not MCP defaults.
 */
export interface RetryPolicy {
  /**
   * The total budget, from the first attempt's start (a durable operation: from its acceptance, as
   * its `deadlineAt`). No attempt starts after it; a durable operation's last one may end up to
   * `minAttemptMs` past it (see `minAttemptMs`). Default 30 s.
   */
  readonly totalMs: number;
  /** The cap of one attempt's timeout; an attempt gets less when less of the budget is left. Default 8 s. */
  readonly attemptTimeoutMs: number;
  /**
   * Attempts including the first. A durable operation counts only the attempts that may have
   * reached the other side: a refused connection sent nothing and does not count. Default 3.
   */
  readonly maxAttempts: number;
  /**
   * The first backoff ceiling, doubled after each attempt (full jitter: a wait drawn between 0 and
   * the ceiling); also the least wait after a refused connection. Default 200 ms.
   */
  readonly baseDelayMs: number;
  /** The largest backoff ceiling. Default 5 s. */
  readonly maxDelayMs: number;
  /**
   * No retry is planned with less than this left of the budget (default `MIN_ATTEMPT_MS`, never
   * more than `attemptTimeoutMs`): it could only time out, and an attempt that times out may have
   * been applied, which turns a clean failure into an unknown outcome. No attempt of a durable
   * operation gets a shorter timeout than this: one a worker picks up late, with less than this left
   * but before its deadline, is still attempted, and that attempt may end this much past the deadline.
   */
  readonly minAttemptMs?: number;
  /**
   * Durable operations: the backoff ceiling after a refused connection (an attempt that provably
   * sent nothing): default `MAX_REFUSED_DELAY_MS` (1 s), never more than `maxDelayMs` nor less than
   * `baseDelayMs`. A worker retries refused connections at least `baseDelayMs` and at most this
   * apart, up to a last try planned `minAttemptMs` plus its poll interval before the deadline, so
   * that a provider that is back in time is reached however long it was down.
   */
  readonly maxRefusedDelayMs?: number;
}

/** Default least budget an attempt needs to be worth starting, ms. */
export const MIN_ATTEMPT_MS = 100;

/** Default backoff ceiling after a refused connection, ms (`RetryPolicy.maxRefusedDelayMs`). */
export const MAX_REFUSED_DELAY_MS = 1_000;

/** The least budget an attempt under `policy` needs to be worth starting. */
export function minAttempt(policy: RetryPolicy): number {
  return Math.min(policy.minAttemptMs ?? MIN_ATTEMPT_MS, policy.attemptTimeoutMs);
}

/** The backoff ceiling after a refused connection under `policy`: never above `maxDelayMs` nor below `baseDelayMs`. */
export function maxRefusedDelay(policy: RetryPolicy): number {
  const cap = Math.min(policy.maxDelayMs, policy.maxRefusedDelayMs ?? MAX_REFUSED_DELAY_MS);
  return Math.max(policy.baseDelayMs, cap);
}

/**
 * The policy a durable operation follows when it names none: 30 s in all, 8 s an attempt, 3
 * attempts, backoff from 200 ms up to 5 s (`minAttemptMs` `MIN_ATTEMPT_MS`, `maxRefusedDelayMs`
 * `MAX_REFUSED_DELAY_MS`). Frozen.
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  totalMs: 30_000,
  attemptTimeoutMs: 8_000,
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
});

/**
 * `partial` over `DEFAULT_RETRY_POLICY` (a field absent or undefined is the default's), checked:
 * throws a RangeError naming the field when `totalMs` or `attemptTimeoutMs` is not a positive
 * number, `maxAttempts` not an integer of at least 1, or another duration negative or not a number.
 */
export function retryPolicy(partial: Partial<RetryPolicy> = {}): RetryPolicy {
  const defined = Object.fromEntries(Object.entries(partial).filter(([, value]) => value !== undefined));
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...defined };
  for (const field of ['totalMs', 'attemptTimeoutMs'] as const)
    if (!(typeof policy[field] === 'number' && policy[field] > 0))
      throw new RangeError(`RetryPolicy.${field} must be a positive number of ms`);
  if (!(Number.isInteger(policy.maxAttempts) && policy.maxAttempts >= 1))
    throw new RangeError('RetryPolicy.maxAttempts must be an integer of at least 1');
  for (const field of ['baseDelayMs', 'maxDelayMs', 'minAttemptMs', 'maxRefusedDelayMs'] as const) {
    const value = policy[field];
    if (value !== undefined && !(typeof value === 'number' && value >= 0 && Number.isFinite(value)))
      throw new RangeError(`RetryPolicy.${field} must be a finite number of ms, 0 or more`);
  }
  return policy;
}

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
   * True: the attempt just made provably sent nothing (its connection was refused). The wait is
   * drawn with full jitter under a ceiling that doubles from `baseDelayMs` up to
   * `maxRefusedDelay(policy)`, and is never less than `baseDelayMs`. Such retries go on up to a
   * last try at `totalMs - minAttempt(policy) - pickupMs`: a wait that would end later is shortened
   * to end there when that is still `baseDelayMs` away, else this attempt was the last.
   */
  readonly refused?: boolean;
  /**
   * With `refused`: how late the retry layer may start a try that is due (a worker's poll interval),
   * ms; the last try is planned this much earlier. Default 0.
   */
  readonly pickupMs?: number;
}

/**
 * After `attemptsMade` failed attempts with `elapsedMs` spent: wait how long, or stop. A retry is
 * planned only if, after its wait, at least `minAttempt(policy)` of the budget is left for it. A
 * server's `retryAfterMs` is honoured when it fits the remaining budget and refused (stop) when it
 * does not. The backoff grows with every attempt made; the cap applies to `count.countedAttempts`.
 * After a refused connection (`count.refused`), see `RetryCount.refused`.
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
  if (count.refused === true)
    return planRefusedRetry(policy, attemptsMade, waitable, random, count.pickupMs ?? 0);
  const delayMs = Math.floor(random() * ceilingOf(policy.maxDelayMs, policy, attemptsMade));
  return delayMs > waitable ? { retry: false, reason: 'deadline_exhausted' } : { retry: true, delayMs };
}

/** See `RetryCount.refused`; `waitable` is what may be waited with `minAttempt` left after it. */
function planRefusedRetry(
  policy: RetryPolicy,
  attemptsMade: number,
  waitable: number,
  random: () => number,
  pickupMs: number,
): RetryPlan {
  // How long until the last try: what a worker picking it up late still starts in time.
  const untilLast = waitable - pickupMs;
  if (untilLast < policy.baseDelayMs) return { retry: false, reason: 'deadline_exhausted' };
  const drawn = Math.floor(random() * ceilingOf(maxRefusedDelay(policy), policy, attemptsMade));
  return { retry: true, delayMs: Math.min(Math.max(drawn, policy.baseDelayMs), untilLast) };
}

/** The full-jitter ceiling after `attemptsMade` attempts: doubling from `baseDelayMs`, capped at `cap`. */
function ceilingOf(cap: number, policy: RetryPolicy, attemptsMade: number): number {
  return Math.min(cap, policy.baseDelayMs * 2 ** Math.max(0, attemptsMade - 1));
}

/** The timeout for the next attempt: the cap, or what is left of the budget if that is less. */
export function attemptTimeout(policy: RetryPolicy, elapsedMs: number): number {
  return Math.max(0, Math.min(policy.attemptTimeoutMs, policy.totalMs - elapsedMs));
}
