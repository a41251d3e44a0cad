import type { JsonObject } from '../core/json.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type { OutboxIntent } from '../ports/receipt-store.js';

/** What an effect returns: the business result, which must name the resource it made. */
export type EffectResult = JsonObject & { resource_id: string };

export interface EffectContext {
  readonly operationId: string;
  readonly attemptId: string;
  readonly identity: OperationIdentity;
  /**
   * Records an outbox message in the effect's own transaction: it commits (or rolls back) with the
   * effect. Synchronous on a synchronous store (SQLite).
   */
  enqueue(intent: OutboxIntent): void | Promise<void>;
}
