import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.js';
import { FaultPoints } from '../core/fault-points.js';
import { timeoutSignal } from '../core/timeout-signal.js';
import type { Logger } from '../core/logger.js';
import { toLogger, type LoggerOption } from '../log/to-logger.js';
import type { OutboxMessage } from '../core/operation-record.js';
import type { IdemStore } from '../ports/idem-store.js';
import { PollingLoop } from './polling-loop.js';
import { networkReason } from './http-exchange.js';

/**
 * Sends without a 2xx after which a message becomes a dead letter. With the default backoff (full
 * jitter, 200 ms doubling to a 30 s cap) 20 sends span about 3 minutes of failures, at most about 6:
 * a receiver that is down for longer needs an operator (`idem ops requeue`) or a higher limit.
 */
export const DEFAULT_OUTBOX_MAX_ATTEMPTS = 20;

/** What the outbox dispatcher sends with, from which store, and how it paces and retries. */
export interface OutboxDispatcherOptions {
  /** Only its outbox is used: any `IdemStore` will do. */
  readonly store: Pick<IdemStore, 'outbox'>;
  readonly clock?: Clock;
  readonly logger?: LoggerOption;
  /** Default `outbox-<uuid>`. */
  readonly workerId?: string;
  /** How long a claimed batch is ours. Default 5000. */
  readonly leaseMs?: number;
  /** Messages claimed per round. Default 10. */
  readonly batchSize?: number;
  /** The wait between polls when nothing was due. Default 200. */
  readonly pollIntervalMs?: number;
  /** Per send; always capped at half the lease, so a send ends before its lease does. Default 5000. */
  readonly sendTimeoutMs?: number;
  /** Backoff: full jitter, ceiling `baseDelayMs * 2^(attempts - 1)` up to `maxDelayMs`. */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /**
   * Sends (claims, a crashed sender's included) after which a message that still got no 2xx becomes
   * a dead letter instead of being retried. Default `DEFAULT_OUTBOX_MAX_ATTEMPTS` (20).
   */
  readonly maxAttempts?: number;
  /** Named places where tests inject failures. Default: none armed. */
  readonly faults?: FaultPoints;
  /** In [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

/**
 * Delivers committed outbox messages: `POST <destination>` with the payload as JSON and the header
 * `Idempotency-Key: <dedupKey>`. Delivery is at least once, made effectively once by the receiver's
 * deduplication: a message is marked done only after a 2xx, so a crash between the send and its
 * `OutboxStore.settle` as `delivered` (fault point `outbox_after_send`) sends it again, with the
 * same key, once its lease expires. Any other outcome (non-2xx, timeout, network error) is retried after a full-jitter
 * backoff, until the message has been sent `maxAttempts` times: then it becomes a dead letter
 * (`outbox.dead_lettered`, logged as an error), kept and never sent again until an operator
 * re-queues it (`OutboxStore.requeue`, `idem ops requeue`). Messages of one batch are sent
 * concurrently. Logs carry the message id, destination host, status and attempts, never the payload.
 * This loop is separate from the Worker's so that a slow provider never delays notifications.
 */
export class OutboxDispatcher {
  readonly workerId: string;
  readonly #outbox: IdemStore['outbox'];
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #leaseMs: number;
  readonly #batchSize: number;
  readonly #sendTimeoutMs: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #maxAttempts: number;
  readonly #faults: FaultPoints;
  readonly #random: () => number;
  readonly #loop: PollingLoop;

  constructor(options: OutboxDispatcherOptions) {
    this.#outbox = options.store.outbox;
    this.#clock = options.clock ?? systemClock;
    this.#logger = toLogger(options.logger);
    this.workerId = options.workerId ?? `outbox-${randomUUID()}`;
    this.#leaseMs = options.leaseMs ?? 5000;
    this.#batchSize = options.batchSize ?? 10;
    this.#sendTimeoutMs = Math.max(1, Math.min(options.sendTimeoutMs ?? 5000, Math.floor(this.#leaseMs / 2)));
    this.#baseDelayMs = options.baseDelayMs ?? 200;
    this.#maxDelayMs = options.maxDelayMs ?? 30_000;
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_OUTBOX_MAX_ATTEMPTS;
    if (!(Number.isInteger(this.#maxAttempts) && this.#maxAttempts >= 1))
      throw new RangeError('maxAttempts must be an integer of at least 1');
    this.#faults = options.faults ?? new FaultPoints();
    this.#random = options.random ?? Math.random;
    this.#loop = new PollingLoop({
      tick: async () => (await this.runOnce()) > 0,
      clock: this.#clock,
      logger: this.#logger,
      intervalMs: options.pollIntervalMs ?? 200,
      event: 'outbox.error',
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops polling; resolves once the batch in hand is done with. Never rejects. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /**
   * Claims up to `batchSize` due messages and sends each once. Resolves to how many were claimed.
   * Rethrows what the store or a fault point throws (the lease then expires, as after a crash).
   */
  async runOnce(): Promise<number> {
    const messages = await this.#outbox.claim({
      workerId: this.workerId,
      now: this.#clock.now(),
      leaseMs: this.#leaseMs,
      limit: this.#batchSize,
    });
    const results = await Promise.allSettled(messages.map((message) => this.#deliver(message)));
    const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    return messages.length;
  }

  async #deliver(message: OutboxMessage): Promise<void> {
    const started = this.#clock.monotonic();
    const failure = await this.#send(message);
    const fields = {
      message_id: message.id,
      destination: hostOf(message.destination),
      worker_id: this.workerId,
      attempts: message.attempts,
      duration_ms: Math.round(this.#clock.monotonic() - started),
    };
    if (failure === undefined) {
      this.#faults.hit('outbox_after_send');
      await this.#outbox.settle(message.id, this.workerId, { kind: 'delivered', at: this.#clock.now() });
      this.#logger.info('outbox.delivered', fields);
      return;
    }
    if (message.attempts >= this.#maxAttempts) {
      await this.#outbox.settle(message.id, this.workerId, {
        kind: 'dead',
        at: this.#clock.now(),
        error: failure,
      });
      this.#logger.error('outbox.dead_lettered', { ...fields, outcome: failure });
      return;
    }
    const delayMs = this.backoff(message.attempts);
    await this.#outbox.settle(message.id, this.workerId, {
      kind: 'retry',
      at: this.#clock.now() + delayMs,
      error: failure,
    });
    this.#logger.warn('outbox.retry_scheduled', { ...fields, outcome: failure, delay_ms: delayMs });
  }

  /** Undefined on a 2xx, else a short body-free reason. */
  async #send(message: OutboxMessage): Promise<string | undefined> {
    // Bounds the whole exchange, body included; held until the send ends, whatever the GC does.
    const timeout = timeoutSignal(this.#sendTimeoutMs);
    try {
      const response = await fetch(message.destination, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': message.dedupKey },
        body: JSON.stringify(message.payload),
        redirect: 'manual', // a 3xx is a failed send, never a resend of the payload to another URL
        signal: timeout.signal,
      });
      await response.arrayBuffer(); // drain, so the connection can be reused
      return response.ok ? undefined : `http_${response.status}`;
    } catch (error) {
      return networkReason(error);
    } finally {
      timeout.dispose();
    }
  }

  /** Full jitter: uniform in [0, min(maxDelayMs, baseDelayMs * 2^(attempts - 1))). */
  backoff(attempts: number): number {
    const ceiling = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** Math.max(0, attempts - 1));
    return Math.floor(this.#random() * ceiling);
  }
}

function hostOf(destination: string): string {
  try {
    return new URL(destination).host;
  } catch {
    return 'invalid-url';
  }
}
