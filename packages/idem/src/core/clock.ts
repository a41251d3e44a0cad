/**
 * Time as Idem sees it. Stored instants are integer epoch milliseconds (`now`); durations are
 * measured on `monotonic`, which never jumps with wall-clock changes. Tests inject a fake.
 */
export interface Clock {
  /** Wall-clock time, integer milliseconds since the Unix epoch. */
  now(): number;
  /** Milliseconds from an arbitrary origin; only differences are meaningful. */
  monotonic(): number;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when aborted. */
  sleep(ms: number, options?: { signal?: AbortSignal }): Promise<void>;
}

/** The real clock: `Date.now()` for instants, `performance.now()` for durations, timers for `sleep`. */
export const systemClock: Clock = {
  // eslint-disable-next-line no-restricted-properties -- the one place wall time is read
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, options = {}) =>
    new Promise<void>((resolve, reject) => {
      const { signal } = options;
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
