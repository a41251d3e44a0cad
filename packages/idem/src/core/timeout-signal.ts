import type { Clock } from './clock.js';

/** The longest delay setTimeout takes (about 24.8 days); a longer wait is armed in steps of it. */
const MAX_TIMER_MS = 2_147_483_647;

/** What `timeoutSignal` also listens to, and the clock it measures with. */
export interface TimeoutSignalOptions {
  /**
   * Parent signals: the returned signal also aborts, with that parent's reason, as soon as any of
   * them does (already aborted: at once). Undefined entries are ignored.
   */
  readonly signal?: AbortSignal | readonly (AbortSignal | undefined)[] | undefined;
  /**
   * Measures `ms` with `clock.sleep` (a test's fake clock). Default: the event loop's own timer,
   * which does not keep the process alive (like `AbortSignal.timeout`).
   */
  readonly clock?: Clock | undefined;
}

/** A signal that aborts on a timeout or with a parent, and owns what makes it abort. */
export interface TimeoutSignal extends Disposable {
  /** Aborts once, with the first of: the timeout's TimeoutError, or a parent's reason. */
  readonly signal: AbortSignal;
  /**
   * Ends the wait: clears the timer and removes the listeners on the parents, so nothing outlives
   * the caller's use; the signal never aborts afterwards (if it has not yet). Idempotent.
   */
  dispose(): void;
}

/**
 * A signal that aborts `ms` after this call (reason: a DOMException named `TimeoutError`, as from
 * `AbortSignal.timeout`, so `error.name === 'TimeoutError'` still classifies it) or when a parent
 * signal aborts (reason: the parent's), whichever comes first. `ms` of Infinity means no timeout.
 *
 * The promise is that the timeout fires on time whatever the garbage collector does. On Node 20
 * a composite of `AbortSignal.timeout(ms)` and another signal (`AbortSignal.any`) does not: the composite holds its sources
 * weakly, so once nothing else references the timeout signal it is collected, its timer cleared,
 * and the composite never aborts (a 1 s attempt timeout lasted 12 s under load). Here the timer's
 * callback and the parents' listeners hold this object, and it holds its controller, so all of it
 * stays reachable until the signal aborts or `dispose` is called; aborting also releases the timer
 * and the listeners. Use it (not `AbortSignal.any`/`AbortSignal.timeout`, which lint forbids in src/)
 * for every bounded wait, and `dispose` it (or `using`) once the wait is over.
 */
export function timeoutSignal(ms: number, options: TimeoutSignalOptions = {}): TimeoutSignal {
  if (Number.isNaN(ms)) throw new RangeError('timeoutSignal: ms is NaN');
  return new OwnedTimeout(Math.max(0, ms), options);
}

class OwnedTimeout implements TimeoutSignal {
  readonly #controller = new AbortController();
  readonly #parents: readonly AbortSignal[];
  readonly #clock: Clock | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Cancels a pending `clock.sleep`. */
  #sleeping: AbortController | undefined;
  #disposed = false;
  readonly #onParentAbort = (event: Event): void => {
    this.#abort((event.target as AbortSignal).reason);
  };

  constructor(ms: number, options: TimeoutSignalOptions) {
    const { signal } = options;
    this.#parents = (Array.isArray(signal) ? signal : [signal]).filter(
      (parent): parent is AbortSignal => parent !== undefined,
    );
    this.#clock = options.clock;
    const aborted = this.#parents.find((parent) => parent.aborted);
    if (aborted !== undefined) {
      this.#disposed = true;
      this.#controller.abort(aborted.reason);
      return;
    }
    for (const parent of this.#parents) parent.addEventListener('abort', this.#onParentAbort);
    if (ms !== Number.POSITIVE_INFINITY) this.#arm(ms);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#sleeping?.abort();
    this.#sleeping = undefined;
    for (const parent of this.#parents) parent.removeEventListener('abort', this.#onParentAbort);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Waits `left` ms, in steps setTimeout can take; counts down by steps, never by reading a clock. */
  #arm(left: number): void {
    if (this.#disposed) return;
    const step = Math.min(left, MAX_TIMER_MS);
    const next = () => (left > step ? this.#arm(left - step) : this.#abort(timeoutReason()));
    if (this.#clock === undefined) {
      this.#timer = setTimeout(next, step);
      this.#timer.unref();
      return;
    }
    const sleeping = new AbortController();
    this.#sleeping = sleeping;
    this.#clock.sleep(step, { signal: sleeping.signal }).then(next, () => undefined);
  }

  #abort(reason: unknown): void {
    if (this.#disposed) return;
    this.dispose();
    this.#controller.abort(reason);
  }
}

/** What `AbortSignal.timeout` aborts with. */
function timeoutReason(): DOMException {
  return new DOMException('The operation was aborted due to timeout', 'TimeoutError');
}
