import type { OutboxMessage } from '../core/operation-record.js';
import type { SignalOption } from './maybe-async.js';
import type { ClaimOptions } from './operations-ledger.js';

/** How a dispatcher ends its hold on a message. */
export type OutboxSettlement =
  | { readonly kind: 'delivered'; readonly at: number }
  | { readonly kind: 'retry'; readonly at: number; readonly error: string }
  | { readonly kind: 'dead'; readonly at: number; readonly error: string };

/**
 * The outbox: messages enqueued inside receipt transactions (`ReceiptTransaction.enqueue`), sent
 * after commit by a dispatcher that holds a lease on each.
 */
export interface OutboxStore {
  /**
   * MUST lease up to `limit` due messages (oldest id first) to `workerId` until `now + leaseMs`,
   * counting an attempt on each: neither delivered nor dead, `nextAttemptAt <= now`, lease absent
   * or expired. A message whose holder crashed is claimed again once its lease expires.
   */
  claim(options: ClaimOptions & { readonly limit: number }): Promise<OutboxMessage[]>;
  /**
   * MUST apply only while `workerId` holds the message's lease (true if it did), and release it. A
   * lease past its expiry that nobody has claimed since is still held: the send it covered happened,
   * and recording it prevents a resend. After another claim, the old holder is refused.
   *
   * `delivered` marks it sent; `retry` makes it due at `at` with `error`; `dead` makes it a dead
   * letter (never claimed until re-queued), only if neither delivered nor dead.
   */
  settle(
    id: number,
    workerId: string,
    settlement: OutboxSettlement,
    options?: SignalOption,
  ): Promise<boolean>;
  /** Dead letters, oldest first (default limit 100). */
  deadLetters(options?: SignalOption & { readonly limit?: number }): Promise<OutboxMessage[]>;
  /**
   * MUST apply only to a dead letter: it becomes due at `now` with its attempts counted from 0.
   * Returns the re-queued message, or undefined if `id` is not a dead letter.
   */
  requeue(id: number, now: number, options?: SignalOption): Promise<OutboxMessage | undefined>;
}
