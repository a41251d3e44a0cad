import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { errorMessage } from './polling-loop.js';

export interface CancelWatchOptions {
  readonly ledger: Pick<OperationsLedger, 'get'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly operationId: string;
  /** The wait between two reads of the operation. */
  readonly intervalMs: number;
}

/**
 * Watches one operation while a long dispatch runs (a command) and aborts `signal` once it is
 * `cancel_requested`. It only reads (`ledger.get`, the ledger's ordinary lock-free read): the
 * cancel request is already committed by `requestCancel`, and settling it stays the worker's
 * guarded write after the dispatch returns. A read that fails is logged and tried again.
 */
export class CancelWatch {
  readonly #requested = new AbortController();
  readonly #stopping = new AbortController();
  readonly #options: CancelWatchOptions;
  #loop: Promise<void> = Promise.resolve();

  constructor(options: CancelWatchOptions) {
    this.#options = options;
  }

  /** Aborted once a cancel request has been observed. */
  get signal(): AbortSignal {
    return this.#requested.signal;
  }

  start(): void {
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { ledger, clock, logger, operationId, intervalMs } = this.#options;
    for (;;) {
      try {
        await clock.sleep(intervalMs, { signal: this.#stopping.signal });
      } catch {
        return;
      }
      try {
        const record = await ledger.get(operationId);
        if (this.#stopping.signal.aborted) return;
        if (record?.status === 'cancel_requested') {
          logger.info('op.cancel_observed', { operation_id: operationId });
          this.#requested.abort(new Error(`cancel of ${operationId} requested`));
          return;
        }
      } catch (error) {
        logger.warn('op.cancel_watch_failed', { operation_id: operationId, message: errorMessage(error) });
      }
    }
  }
}
