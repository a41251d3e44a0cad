import { systemClock, type Clock } from '../../core/clock.js';
import { IdemError } from '../../core/errors.js';
import type { MaybePromise } from '../../ports/maybe-async.js';
import { isSqliteBusy } from './sqlite-errors.js';

/** How long a SQLite write waits for the write lock when no `lockTimeoutMs` is given. */
export const DEFAULT_SQLITE_LOCK_TIMEOUT_MS = 5000;

/** How long a caller is told to wait after SQLITE_BUSY met at once: the write lock is usually held for ms. */
export const SQLITE_BUSY_RETRY_MS = 50;

/** The longest pause between two tries of a lock another connection holds. */
export const MAX_LOCK_PAUSE_MS = 25;

/**
 * The pause after try number `attempt` (0 first) of a lock another connection holds: 1, 2, 4, 8,
 * 16 ms, then MAX_LOCK_PAUSE_MS, the schedule of every SQLite lock wait in Idem (SQLite's own busy
 * handler sleeps much the same, without jitter). Never beyond the wait's bound: see LockWait.
 */
export function lockPauseMs(attempt: number): number {
  return Math.min(MAX_LOCK_PAUSE_MS, 2 ** attempt);
}

/** When a caller is told to come back after a lock wait ran out: a quarter of the bound, 50 ms to 1 s. */
export function lockRetryAfterMs(lockTimeoutMs: number): number {
  return Math.max(50, Math.min(1000, Math.round(lockTimeoutMs / 4)));
}

/** The `busy` error of a write whose wait for the write lock ran out: nothing was changed. */
export function writeLockTimeout(lockTimeoutMs: number, cause?: unknown): IdemError {
  return new IdemError(
    'busy',
    `the write lock was not obtained within ${lockTimeoutMs} ms; nothing was changed`,
    { retryAfterMs: lockRetryAfterMs(lockTimeoutMs), ...(cause === undefined ? {} : { cause }) },
  );
}

/**
 * One bounded wait for a SQLite lock another connection holds, from its first try: pauses by
 * lockPauseMs, never past `timeoutMs`. Time is the injected clock's (the system clock by default);
 * a synchronous pause cannot move a fake clock, so the wait also counts what it slept itself and
 * ends when either reaches the bound.
 */
export class LockWait {
  readonly timeoutMs: number;
  readonly #clock: Clock;
  readonly #started: number;
  #attempt = 0;
  #slept = 0;

  constructor(timeoutMs: number, clock: Clock = systemClock) {
    this.timeoutMs = timeoutMs;
    this.#clock = clock;
    this.#started = clock.monotonic();
  }

  /** Milliseconds left before the bound; 0 or less once it has passed. */
  get leftMs(): number {
    return this.timeoutMs - Math.max(this.#clock.monotonic() - this.#started, this.#slept);
  }

  /**
   * Sleeps the next pause on the clock (cut to what is left) and resolves true; resolves false at
   * once when the bound has passed. Rejects with the signal's reason when it aborts.
   */
  async pause(signal?: AbortSignal): Promise<boolean> {
    const ms = this.#next();
    if (ms === undefined) return false;
    await this.#clock.sleep(ms, signal === undefined ? {} : { signal });
    return true;
  }

  /**
   * Waits for `released` (another writer of this process letting go of the lock), at most until
   * the bound: true when it came, false when the bound passed first. Rejects with the signal's
   * reason when it aborts.
   */
  async until(released: Promise<unknown>, signal?: AbortSignal): Promise<boolean> {
    const left = this.leftMs;
    if (left <= 0) return false;
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal?.reason);
    if (signal?.aborted === true) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    const bound = this.#clock.sleep(left, { signal: stop.signal }).then(() => false);
    bound.catch(() => undefined); // once `released` won, the stopped sleep's rejection goes nowhere
    try {
      return await Promise.race([released.then(() => true), bound]);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      stop.abort();
    }
  }

  /** The same as `pause`, blocking the thread (for a synchronous driver, such as a migration). */
  pauseSync(): boolean {
    const ms = this.#next();
    if (ms === undefined) return false;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    return true;
  }

  #next(): number | undefined {
    const left = this.leftMs;
    if (left <= 0) return undefined;
    const ms = Math.min(lockPauseMs(this.#attempt), left);
    this.#attempt += 1;
    this.#slept += ms;
    return ms;
  }
}

/**
 * Runs `attempt` (a synchronous migration, say) again while it fails with SQLITE_BUSY, pausing by
 * LockWait for at most `timeoutMs` from the first try; then throws writeLockTimeout. Any other
 * error is thrown as it is.
 */
export function retryWhileBusySync<T>(attempt: () => T, timeoutMs: number, clock?: Clock): T {
  const wait = new LockWait(timeoutMs, clock);
  for (;;) {
    try {
      return attempt();
    } catch (error) {
      if (!isSqliteBusy(error)) throw error;
      if (!wait.pauseSync()) throw writeLockTimeout(timeoutMs, error);
    }
  }
}

/**
 * The asynchronous `retryWhileBusySync`: runs `attempt` again while it fails on the lock, pausing
 * by `wait` (its schedule, its bound, its clock); then throws `gaveUp` of the last failure
 * (default writeLockTimeout). Any other error is thrown as it is.
 */
export async function retryWhileBusy<T>(
  attempt: () => MaybePromise<T>,
  wait: LockWait,
  options: RetryWhileBusyOptions = {},
): Promise<T> {
  const busy = options.busy ?? isSqliteBusy;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (error) {
      if (!busy(error)) throw error;
      if (!(await wait.pause(options.signal))) {
        throw options.gaveUp === undefined ? writeLockTimeout(wait.timeoutMs, error) : options.gaveUp(error);
      }
    }
  }
}

/** How retryWhileBusy reads a failure and what it throws once the wait ran out. */
export interface RetryWhileBusyOptions {
  /** Ends a pause (and the wait) with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Whether a failure met the lock. Default: SQLITE_BUSY or SQLITE_LOCKED itself (isSqliteBusy). */
  busy?: (error: unknown) => boolean;
  /** What to throw when the bound passed, given the last failure. Default writeLockTimeout. */
  gaveUp?: (error: unknown) => unknown;
}
