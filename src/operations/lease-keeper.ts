import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { errorMessage } from './polling-loop.js';

export interface LeaseKeeperOptions {
  readonly ledger: Pick<OperationsLedger, 'renew'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly operationId: string;
  readonly workerId: string;
  readonly leaseMs: number;
}

/**
 * Keeps a worker's lease on one operation alive while it works on it: renews every `leaseMs / 3`,
 * so two renewals may fail (e.g. `busy`) before the lease runs out. When the store says the lease
 * is no longer ours, `signal` aborts: whatever is in flight must stop, because another worker may
 * now own the operation. A renewal that throws is logged and tried again at the next tick.
 */
export class LeaseKeeper {
  readonly #lost = new AbortController();
  readonly #stopping = new AbortController();
  readonly #options: LeaseKeeperOptions;
  #loop: Promise<void> = Promise.resolve();

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
  }

  /** Aborted once the lease is known to be lost. */
  get signal(): AbortSignal {
    return this.#lost.signal;
  }

  start(): void {
    this.#loop = this.#run();
  }

  /** Stops renewing (the lease is left to the last write or to expiry); resolves when idle. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { ledger, clock, logger, operationId, workerId, leaseMs } = this.#options;
    const every = Math.max(1, Math.floor(leaseMs / 3));
    for (;;) {
      try {
        await clock.sleep(every, { signal: this.#stopping.signal });
      } catch {
        return;
      }
      try {
        const now = clock.now();
        const renewed = await ledger.renew(operationId, { workerId, now, leaseExpiresAt: now + leaseMs });
        // Stopped meanwhile: the worker's last write may have released the lease on purpose.
        if (this.#stopping.signal.aborted) return;
        if (!renewed) {
          logger.warn('op.lease_lost', { operation_id: operationId, worker_id: workerId });
          this.#lost.abort(new Error(`lease on ${operationId} lost`));
          return;
        }
      } catch (error) {
        logger.warn('op.lease_renew_failed', {
          operation_id: operationId,
          worker_id: workerId,
          message: errorMessage(error),
        });
      }
    }
  }
}
