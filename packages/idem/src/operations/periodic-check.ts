import type { Clock } from '../core/clock.js';

export interface PeriodicCheckOptions {
  readonly clock: Clock;
  /** The wait before each check, on `clock`. */
  readonly everyMs: number;
  /** One check: true when the watched condition holds, which trips the check and ends the loop. */
  readonly check: () => Promise<boolean>;
  /** Called once, when a check holds (not when `stop` came meanwhile); returns the abort reason. */
  readonly tripped: () => Error;
  /** Called for a check (or `tripped`) that threw; the next check follows `everyMs` later. */
  readonly failed: (error: unknown) => void;
}

/**
 * Checks one condition every `everyMs` on the injected clock while some work runs, and aborts
 * `signal` the first time it holds (CancelWatch, LeaseKeeper). A check that throws is reported and
 * tried again at the next tick. `stop` ends the wait at once, lets a running check finish (its
 * answer is then ignored: the work has ended), and resolves when the loop has exited.
 */
export class PeriodicCheck {
  readonly #tripped = new AbortController();
  readonly #stopping = new AbortController();
  readonly #options: PeriodicCheckOptions;
  #loop: Promise<void> = Promise.resolve();

  constructor(options: PeriodicCheckOptions) {
    this.#options = options;
  }

  /** Aborted once a check has held. */
  get signal(): AbortSignal {
    return this.#tripped.signal;
  }

  start(): void {
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { clock, everyMs, check, tripped, failed } = this.#options;
    for (;;) {
      try {
        await clock.sleep(everyMs, { signal: this.#stopping.signal });
      } catch {
        return;
      }
      try {
        const holds = await check();
        if (this.#stopping.signal.aborted) return;
        if (holds) {
          this.#tripped.abort(tripped());
          return;
        }
      } catch (error) {
        failed(error);
      }
    }
  }
}
