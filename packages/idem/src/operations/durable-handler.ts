import type { z } from 'zod';
import type { ErrorCode } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { RetryPolicy } from '../core/retry-policy.js';

/**
 * What the external system offers to settle an attempt whose outcome is unknown:
 * - `key`: it deduplicates on a key we send; re-sending with the same key replays or creates once;
 * - `reference`: it stores a reference we send and can be searched by it (reconciliation);
 * - `none`: nothing; an unknown outcome can only be reported (`outcome_unknown`).
 */
export type RecoveryMode = 'key' | 'reference' | 'none';

/**
 * The key sent to the external system. Derived from the persisted operation id (never generated per
 * attempt), so every attempt, in any process and after any crash, sends the same one.
 */
export function providerKeyFor(operationId: string): string {
  return `idem-${operationId}`;
}

/** What a durable handler's call is given: the provider key, its time budget and its signals. */
export interface HandlerCallContext {
  /** `providerKeyFor(operation.operationId)`. */
  readonly providerKey: string;
  /** This call's budget (the attempt timeout, capped by what is left of the deadline). */
  readonly timeoutMs: number;
  /** Aborted when the worker loses its lease; the call must give up promptly. */
  readonly signal: AbortSignal;
  /**
   * Only for a handler with `watchesCancel: true`, and only in `dispatch`: aborted once a cancel
   * request is observed while the call runs. The handler may stop its effect and answer
   * `cancelled`, or finish and answer what really happened.
   */
  readonly cancelSignal?: AbortSignal;
}

/** The effect happened: the resource it made, and business fields for the stored result. */
export interface Applied {
  readonly kind: 'created';
  readonly resourceId: string;
  /** Merged into the result beside `status`, `operation_id` and `resource_id`; no reserved names. */
  readonly fields: JsonObject;
  /** True when the external system answered from its own deduplication (a replay). */
  readonly replayed?: boolean;
}

/**
 * One dispatch's outcome, classified by whether the effect was applied:
 * - `created`: applied;
 * - `rejected`: not applied and never will be for these arguments (not retried); `code` is the
 *   stored error code (`forbidden` or `invalid_argument`);
 * - `throttled`: not applied, may be later (`retryAfterMs` if the system said when); `unsent` when
 *   the request provably never reached the external system (its connection was refused): such an
 *   attempt is retried with backoff until the deadline and does not count against `maxAttempts`;
 * - `ambiguous`: may or may not have been applied;
 * - `failed`: the effect ran and ended without success (e.g. a command's non-zero exit): final,
 *   never retried; `message` becomes the stored error and `evidence` the stored result;
 * - `cancelled`: the handler stopped its effect because of a cancel request (`cancelSignal`)
 *   before it ended by itself; `evidence` becomes the stored result.
 * `reason` and `detail` strings are short and body-free: they go into logs and attempt rows.
 */
export type DispatchOutcome =
  | Applied
  | {
      readonly kind: 'rejected';
      readonly code: 'forbidden' | 'invalid_argument';
      readonly status: number;
      readonly reason: string;
    }
  | {
      readonly kind: 'throttled';
      readonly status: number;
      readonly retryAfterMs?: number;
      readonly unsent?: boolean;
    }
  | { readonly kind: 'ambiguous'; readonly reason: string }
  | {
      readonly kind: 'failed';
      readonly code: ErrorCode;
      readonly reason: string;
      readonly message: string;
      readonly evidence?: JsonObject;
    }
  | { readonly kind: 'cancelled'; readonly evidence?: JsonObject };

/**
 * What a reconciliation established: the effect exists (`created`), it does not (`absent`), nothing
 * (`ambiguous`: the lookup itself failed), or the mode cannot reconcile (`unsupported`).
 */
export type ReconcileOutcome =
  | Applied
  | { readonly kind: 'absent' }
  | { readonly kind: 'ambiguous'; readonly reason: string }
  | { readonly kind: 'unsupported' };

/** The window and key an operator needs to find an effect by hand. */
export interface UnknownOutcomeContext {
  readonly providerKey: string;
  /** Epoch ms: the effect, if any, happened between these instants. */
  readonly from: number;
  readonly to: number;
  /**
   * Set when the worker stopped resending because the provider may have forgotten the key: the
   * handler's `providerKeyRetentionMs`, so that the sentence can say why no resend settled it.
   */
  readonly keyRetentionPassedMs?: number;
}

/**
 * One kind of durable operation's external side effect: give one per durable tool to `startWorker`
 * (`handlers`, by the tool's name). The worker owns retries, budgets, leases, state and the stored
 * result; a handler makes at most one external call per method call and classifies its answer.
 * Contract (MUST / MAY):
 * - a method that sends a key (modes `key` and `reference`) MUST send `context.providerKey` (never a
 *   key of its own) to the external system; every method MUST give up promptly once
 *   `context.signal` aborts and SHOULD keep to `context.timeoutMs`;
 * - a method MUST NOT retry, sleep for backoff or write to the store: the worker does;
 * - a method SHOULD classify rather than throw. A throw from `dispatch` counts as `ambiguous` (the
 *   call may have reached the system; `op.handler_error` logs its message); a throw from
 *   `reconcile` ends the worker's turn (`worker.error`) and the operation is taken up again once
 *   its lease expires. What a handler throws or returns as `reason`/`detail` is logged, so it MUST
 *   NOT carry secrets, bodies or argument values.
 */
export interface DurableHandler {
  /**
   * MUST: what the external system offers to settle an attempt whose outcome is unknown (see
   * `RecoveryMode`). `key` promises that the system applies one request per key; `reference` that
   * `reconcile` can find an effect by this key; `none` that nothing can, and such an attempt ends
   * `outcome_unknown` for an operator to settle.
   */
  readonly mode: RecoveryMode;
  /**
   * Mode `reference`: how long after the worker abandoned a request (its start + the attempt
   * timeout) the external system may still apply it. A lookup that finds nothing proves that
   * nothing was applied only after this; until then the worker looks again later. Default: the
   * attempt timeout. 0 suits a system that applies a request before it answers and drops it once
   * the client is gone.
   */
  readonly landingMs?: number;
  /**
   * The recovery mode of one operation, when it depends on its arguments (a command declared
   * rerunnable or not); default `mode`.
   */
  modeFor?(operation: OperationRecord): RecoveryMode; // MAY; pure, no I/O.
  /**
   * Mode `key`: how long the external system keeps an idempotency key, ms. A keyed resend is the
   * one way to settle an attempt that may have been applied, and it is safe only while the system
   * still knows the key: the worker sends none that could reach it later than this after the first
   * attempt that may have reached it (the resend's own timeout is narrowed to fit); past that, the
   * operation ends `outcome_unknown`. Absent: the key is kept longer than any operation lasts.
   */
  readonly providerKeyRetentionMs?: number;
  /**
   * This operation kind's own budget and attempts, instead of the worker's policy: any of its
   * fields, the others `DEFAULT_RETRY_POLICY`'s (not the worker's). MAY.
   */
  readonly policy?: Partial<RetryPolicy>;
  /**
   * True: the worker watches the operation while `dispatch` runs and aborts `cancelSignal` when a
   * cancel request arrives (one extra read every poll interval). Default false.
   */
  readonly watchesCancel?: boolean;
  /**
   * MUST: make the effect once for `operation.args`, sending `context.providerKey`, and classify
   * the answer (see `DispatchOutcome`): `created` only when the system applied it (or replayed an
   * application of this key); `rejected` only when it never will be for these arguments;
   * `throttled` only when it was not applied; `ambiguous` whenever it may have been. With `mode`
   * `key`, MUST NOT apply the effect twice for one provider key (the system deduplicates).
   */
  dispatch(operation: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome>;
  /**
   * MUST for mode `reference` (MAY answer `unsupported` otherwise): look the effect up by
   * `context.providerKey`; `created` only for an effect carrying this key, `absent` only when the
   * system's answer proves there is none, `ambiguous` when the lookup itself failed.
   */
  reconcile(operation: OperationRecord, context: HandlerCallContext): Promise<ReconcileOutcome>;
  /**
   * MUST: one sentence for `outcome_unknown`: what to check at the external system to settle it
   * (the key and the window in `context`). Pure, no I/O. It is stored and shown to the caller and
   * operators: no secrets, and of the arguments only what identifies the effect (e.g. a service name).
   */
  nextAction(operation: OperationRecord, context: UnknownOutcomeContext): string;
  /**
   * The business fields of a success known only by its resource id (an operator found the effect
   * and resolves or corrects the operation), from the operation's own args: the same fields that
   * `dispatch` puts in `Applied.fields`, so every success of this operation has one shape. Absent:
   * such a success carries status, operation_id and resource_id only. MAY; pure, no I/O.
   */
  successFields?(operation: OperationRecord, resourceId: string): JsonObject;
  /**
   * The business fields a success carries beside `resource_id` (give the same zod object as the
   * durable tool's `resultSchema`). The worker then records a success with only the fields of
   * `Applied.fields` that fit it: the effect has happened, so a field that does not fit never
   * turns it into a failure; it is left out and named (never its value) in an `op.result_mismatch`
   * error line. The evidence of a `cancelled` outcome (the answer a cancelled operation gives)
   * keeps Idem's own names and only the business fields that fit, likewise. MAY.
   */
  readonly resultSchema?: z.ZodObject;
}
