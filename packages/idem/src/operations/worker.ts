import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.js';
import { FaultPoints } from '../core/fault-points.js';
import type { Logger } from '../core/logger.js';
import { toLogger, type LoggerOption } from '../log/to-logger.js';
import { retryPolicy, type RetryPolicy } from '../core/retry-policy.js';
import type { IdemStore } from '../ports/idem-store.js';
import type { DurableHandler } from './durable-handler.js';
import { LeaseKeeper } from './lease-keeper.js';
import { OperationProcessor } from './operation-processor.js';
import { OperationWriter, type Next } from './operation-writer.js';
import { PollingLoop } from './polling-loop.js';

/** What a worker runs: the ledger, a handler per operation name, and its lease, polling and policy. */
export interface WorkerOptions {
  /** Only its operations ledger is used: any `IdemStore` will do. */
  readonly store: Pick<IdemStore, 'ledger'>;
  /** By operation name (`identity.operation`). */
  readonly handlers: Readonly<Record<string, DurableHandler>>;
  /** Default: the system clock. */
  readonly clock?: Clock;
  /** Default: silent. */
  readonly logger?: LoggerOption;
  /** Default `worker-<uuid>`; must differ between workers that run at the same time. */
  readonly workerId?: string;
  /** Lease length, renewed every `leaseMs / 3` while the worker works on an operation. Default 5000. */
  readonly leaseMs?: number;
  /** The wait between polls when nothing was due. Default 200. */
  readonly pollIntervalMs?: number;
  /**
   * The retry policy of operations whose handler has none of its own: any of its fields, the others
   * `DEFAULT_RETRY_POLICY`'s. A refused connection is retried up to a last try planned
   * `minAttemptMs` + `pollIntervalMs` before the deadline (see `RetryPolicy.maxRefusedDelayMs`).
   */
  readonly policy?: Partial<RetryPolicy>;
  /** How long a final record replays. Default 24 h. */
  readonly retentionMs?: number;
  /** Named places where tests inject failures. Default: none armed. */
  readonly faults?: FaultPoints;
  /** In [0, 1): backoff jitter. Default `Math.random`. */
  readonly random?: () => number;
}

/** Bounds the rules loop for one claim, against a store that refuses writes yet reports our lease. */
const MAX_STEPS = 8;

/**
 * Carries durable operations from `accepted` to a final state, one claimed operation at a time,
 * by the rules of `OperationProcessor` (the table there). Promises:
 * - it works on an operation only while holding its lease (`claimDue`), renews the lease every
 *   `leaseMs / 3`, and aborts the attempt in flight when a renewal reports the lease lost;
 * - every state write is guarded by the lease and a `from` list; a refused write is never retried
 *   blindly: the record is re-read and the rules decide again, or the worker lets go;
 * - the provider key is `idem-<operation id>` on every attempt, in every process;
 * - one retry layer: a handler never retries (its contract); backoff is a persisted `nextAttemptAt`,
 *   so a waiting operation holds no lease and survives a restart.
 * `runOnce` rethrows what the store or a fault point throws, leaving the lease to expire exactly
 * as a crash at that point would; the `start` loop logs such errors (`worker.error`) and goes on.
 * The outbox has its own loop (`OutboxDispatcher`) so that a slow provider never delays messages.
 */
export class Worker {
  readonly workerId: string;
  readonly #ledger: IdemStore['ledger'];
  readonly #handlers: Readonly<Record<string, DurableHandler>>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #leaseMs: number;
  readonly #writer: OperationWriter;
  readonly #processor: OperationProcessor;
  readonly #loop: PollingLoop;

  constructor(options: WorkerOptions) {
    const ledger = options.store.ledger;
    this.#ledger = ledger;
    this.#handlers = options.handlers;
    this.#clock = options.clock ?? systemClock;
    this.#logger = toLogger(options.logger);
    this.workerId = options.workerId ?? `worker-${randomUUID()}`;
    this.#leaseMs = options.leaseMs ?? 5000;
    if (!(this.#leaseMs >= 3)) throw new RangeError('leaseMs must be at least 3');
    const policy = retryPolicy(options.policy);
    // A handler's own policy is checked now, not when its first operation comes.
    for (const handler of Object.values(options.handlers))
      if (handler.policy !== undefined) retryPolicy(handler.policy);
    const pollIntervalMs = options.pollIntervalMs ?? 200;
    const common = { ledger, clock: this.#clock, logger: this.#logger, workerId: this.workerId };
    this.#writer = new OperationWriter({
      ...common,
      retentionMs: options.retentionMs ?? 24 * 60 * 60 * 1000,
    });
    this.#processor = new OperationProcessor({
      ...common,
      writer: this.#writer,
      policy,
      faults: options.faults ?? new FaultPoints(),
      random: options.random ?? Math.random,
      // A handler that watches for cancel requests (commands) re-reads at the polling pace.
      cancelPollMs: pollIntervalMs,
      // An idle loop sees a due operation within one poll interval.
      pickupMs: pollIntervalMs,
    });
    this.#loop = new PollingLoop({
      tick: () => this.runOnce(),
      clock: this.#clock,
      logger: this.#logger,
      intervalMs: pollIntervalMs,
      event: 'worker.error',
    });
  }

  /** Polls until `stop`: claims and processes due operations; logs errors, never throws. */
  start(): void {
    this.#loop.start();
  }

  /** Stops polling; resolves once the operation in hand (if any) is done with. Never rejects. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Claims one due operation and carries it as far as it goes now; false when nothing was due. */
  async runOnce(): Promise<boolean> {
    const claimed = await this.#ledger.claim({
      workerId: this.workerId,
      now: this.#clock.now(),
      leaseMs: this.#leaseMs,
    });
    if (claimed === undefined) return false;
    const handler = this.#handlers[claimed.identity.operation];
    if (handler === undefined) {
      // Not failed: a worker that knows this operation may take it once this lease expires.
      this.#logger.error('op.no_handler', this.#writer.fields(claimed));
      return true;
    }
    const lease = new LeaseKeeper({
      ledger: this.#ledger,
      clock: this.#clock,
      logger: this.#logger,
      operationId: claimed.operationId,
      workerId: this.workerId,
      leaseMs: this.#leaseMs,
    });
    lease.start();
    try {
      let next: Next = claimed;
      for (let step = 0; next !== undefined && !lease.signal.aborted; step += 1) {
        if (step === MAX_STEPS) {
          this.#logger.error('op.stuck', this.#writer.fields(next));
          break;
        }
        next = await this.#processor.step(next, handler, lease.signal);
      }
    } finally {
      await lease.stop();
    }
    return true;
  }
}
