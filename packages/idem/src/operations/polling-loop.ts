import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';

/**
 * Runs `tick` again and again until stopped: immediately after a tick that did work, after
 * `intervalMs` (on the injected clock) after an idle tick or an error. A tick that throws is logged
 * as `event` and never ends the loop. `stop` ends the wait at once, lets a running tick finish, and
 * resolves when the loop has exited; it never rejects.
 */
export class PollingLoop {
  readonly #tick: () => Promise<boolean>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #event: string;
  #stopping: AbortController | undefined;
  #running: Promise<void> | undefined;

  constructor(options: {
    tick: () => Promise<boolean>;
    clock: Clock;
    logger: Logger;
    intervalMs: number;
    /** The log event for a failed tick, e.g. `worker.error`. */
    event: string;
  }) {
    this.#tick = options.tick;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#intervalMs = options.intervalMs;
    this.#event = options.event;
  }

  get running(): boolean {
    return this.#running !== undefined;
  }

  /** Starts the loop; a second call while it runs does nothing. */
  start(): void {
    if (this.#running !== undefined) return;
    const stopping = new AbortController();
    this.#stopping = stopping;
    this.#running = this.#run(stopping.signal);
  }

  async stop(): Promise<void> {
    this.#stopping?.abort();
    await this.#running;
    this.#running = undefined;
    this.#stopping = undefined;
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let worked = false;
      try {
        worked = await this.#tick();
      } catch (error) {
        this.#logger.error(this.#event, { message: errorMessage(error) });
      }
      if (worked || signal.aborted) continue;
      try {
        await this.#clock.sleep(this.#intervalMs, { signal });
      } catch {
        // stopped while waiting
      }
    }
  }
}

/** A log-safe description of something thrown: its code and message, never its cause's payload. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
