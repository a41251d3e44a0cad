import type { JsonObject } from '../core/json.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type { OutboxIntent } from '../ports/receipt-store.js';

/** What an effect returns: the business result, which must name the resource it made. */
export type EffectResult = JsonObject & { resource_id: string };

/** What an effect is told about the call it runs for, and how it enqueues an outbox message. */
export interface EffectContext {
  /** The operation this effect's result is recorded under. */
  readonly operationId: string;
  /** This call's attempt (each call, a replay too, has its own). */
  readonly attemptId: string;
  /** Who acts, where, which operation and version, and the idempotency key. */
  readonly identity: OperationIdentity;
  /**
   * Records an outbox message in the effect's own transaction: it commits (or rolls back) with the
   * effect. Synchronous on a synchronous store (SQLite).
   */
  enqueue(intent: OutboxIntent): void | Promise<void>;
}
