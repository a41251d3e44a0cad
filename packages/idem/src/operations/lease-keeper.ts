import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { PeriodicCheck } from './periodic-check.js';
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
 * now own the operation. A renewal that throws is logged and tried again at the next tick. `stop`
 * stops renewing (the lease is left to the last write or to expiry) and resolves when idle; a
 * renewal that answers after `stop` is ignored (the last write may have released the lease on purpose).
 */
export class LeaseKeeper extends PeriodicCheck {
  constructor(options: LeaseKeeperOptions) {
    const { ledger, clock, logger, operationId, workerId, leaseMs } = options;
    super({
      clock,
      everyMs: Math.max(1, Math.floor(leaseMs / 3)),
      check: async () => {
        const now = clock.now();
        return !(await ledger.renew(operationId, { workerId, now, leaseExpiresAt: now + leaseMs }));
      },
      tripped: () => {
        logger.warn('op.lease_lost', { operation_id: operationId, worker_id: workerId });
        return new Error(`lease on ${operationId} lost`);
      },
      failed: (error) =>
        logger.warn('op.lease_renew_failed', {
          operation_id: operationId,
          worker_id: workerId,
          message: errorMessage(error),
        }),
    });
  }
}
