import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { PeriodicCheck } from './periodic-check.js';
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
 * `signal` is aborted once a cancel request has been observed.
 */
export class CancelWatch extends PeriodicCheck {
  constructor(options: CancelWatchOptions) {
    const { ledger, clock, logger, operationId, intervalMs } = options;
    super({
      clock,
      everyMs: intervalMs,
      check: async () => (await ledger.get(operationId))?.status === 'cancel_requested',
      tripped: () => {
        logger.info('op.cancel_observed', { operation_id: operationId });
        return new Error(`cancel of ${operationId} requested`);
      },
      failed: (error) =>
        logger.warn('op.cancel_watch_failed', { operation_id: operationId, message: errorMessage(error) }),
    });
  }
}
