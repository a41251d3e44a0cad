import type { JsonObject } from './json.js';
import type { OperationIdentity } from './operation-identity.js';
import type { OperationState } from './operation-state.js';

/**
 * `local`: the effect commits with the record, which is born `succeeded` (a receipt).
 * `durable`: the record is born `accepted` and a worker carries it to a final state.
 */
export type OperationKind = 'local' | 'durable';

/** The stored error of an operation that ended without success. */
export interface OperationError {
  readonly code: string;
  readonly message: string;
  readonly nextAction?: string;
}

/**
 * One intended action as the ledger keeps it. For a local operation this is the receipt: identity,
 * request fingerprint and the original result, committed in the same transaction as the effect.
 */
export interface OperationRecord {
  readonly operationId: string;
  readonly identity: OperationIdentity;
  readonly fingerprint: string;
  readonly kind: OperationKind;
  readonly status: OperationState;
  readonly resourceId?: string;
  /** For `succeeded`: the result exactly as first returned (without the `replayed` marker). */
  readonly result?: JsonObject;
  /** For `durable`: the validated arguments the worker executes. */
  readonly args?: JsonObject;
  readonly error?: OperationError;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Epoch ms after which the record no longer replays; unset while the operation is not final. */
  readonly expiresAt?: number;
  /** Epoch ms: the operation's total deadline (durable only). */
  readonly deadlineAt?: number;
  readonly attemptCount: number;
  /**
   * True while an attempt may have reached the external provider and its outcome is not
   * established: recovery must reuse the provider key, reconcile, or report outcome_unknown.
   */
  readonly dispatched: boolean;
  readonly leaseOwner?: string;
  readonly leaseExpiresAt?: number;
  readonly cancelRequestedAt?: number;
  /** Set when an operator settled or corrected the operation: the latest of `audit`. */
  readonly resolvedBy?: string;
  readonly resolvedAt?: number;
  /** Every operator change of the operation, oldest first; absent when there was none. */
  readonly audit?: readonly OperatorChange[];
  /**
   * The W3C `traceparent` (`00-{trace id}-{span id}-{flags}`) of the call that accepted a durable
   * operation, set only when that call was traced (an OpenTelemetry tracer was registered): a
   * worker in any process links its attempts' spans to it.
   */
  readonly acceptedTrace?: string;
}

/**
 * One operator change, kept with the record for as long as the record: who, when, the state before
 * and after, and why. `resolve` settled an `outcome_unknown`; `correct` changed a final `failed` or
 * `cancelled` to `succeeded` once the effect was found to exist; `cancel` asked for an `accepted` or
 * `running` operation to be cancelled (`to` is `cancel_requested`; the worker settles it).
 */
export interface OperatorChange {
  readonly action: 'resolve' | 'correct' | 'cancel';
  readonly by: string;
  /** Epoch ms. */
  readonly at: number;
  readonly from: OperationState;
  readonly to: OperationState;
  readonly reason?: string;
  /** For `to: 'succeeded'`: the resource the operator found. */
  readonly resourceId?: string;
  /** The stored error the change replaced, if any. */
  readonly previousError?: OperationError;
  /** For the correction of a success a person settled: the result it replaced. */
  readonly previousResult?: JsonObject;
}

/** One execution attempt of an operation. */
export interface AttemptRecord {
  readonly attemptId: string;
  readonly operationId: string;
  readonly number: number;
  readonly workerId: string;
  readonly startedAt: number;
  readonly endedAt?: number;
  /** e.g. succeeded, retryable_failure, ambiguous, failed, cancelled, reconciled. */
  readonly outcome?: string;
  readonly detail?: string;
}

/** A durable intent to notify another system, committed with the change it reports. */
export interface OutboxMessage {
  readonly id: number;
  /** The receiver deduplicates on this key; it is the same on every send. */
  readonly dedupKey: string;
  readonly destination: string;
  readonly payload: JsonObject;
  readonly createdAt: number;
  readonly attempts: number;
  readonly dispatchedAt?: number;
  /** Why the last send failed (short, body-free). */
  readonly lastError?: string;
  /** Epoch ms: when the message became a dead letter (no more sends until re-queued). */
  readonly deadAt?: number;
}
