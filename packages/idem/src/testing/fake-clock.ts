import type { Clock } from '../core/clock.js';

interface Sleeper {
  until: number;
  resolve: () => void;
}

/**
 * A Clock that moves only when told. `advance` wakes every sleeper whose time has come, so tests of
 * expiry, deadlines and backoff run instantly and deterministically.
 */
export class FakeClock implements Clock {
  #now: number;
  #mono = 0;
  #sleepers: Sleeper[] = [];

  constructor(startEpochMs = Date.UTC(2026, 0, 1)) {
    this.#now = startEpochMs;
  }

  now(): number {
    return this.#now;
  }

  monotonic(): number {
    return this.#mono;
  }

  sleep(ms: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      const sleeper: Sleeper = {
        until: this.#mono + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.#sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Moves both clocks forward by `ms` and wakes due sleepers. */
  advance(ms: number): void {
    this.#now += ms;
    this.#mono += ms;
    const due = this.#sleepers.filter((s) => s.until <= this.#mono);
    this.#sleepers = this.#sleepers.filter((s) => s.until > this.#mono);
    for (const sleeper of due) sleeper.resolve();
  }

  /** Sets the wall clock only (the monotonic clock never goes back). */
  setNow(epochMs: number): void {
    this.#now = epochMs;
  }

  get pendingSleepers(): number {
    return this.#sleepers.length;
  }
}
