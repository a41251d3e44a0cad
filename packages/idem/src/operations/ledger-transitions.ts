import type { OperationRecord } from '../core/operation-record.js';
import {
  attemptChange,
  cancelChange,
  closedWithState,
  resolutionChange,
  transitionChange,
  type OperatorResolution,
} from '../core/operation-changes.js';
import { isActive, type OperationState } from '../core/operation-state.js';
import type { SignalOption } from '../ports/maybe-async.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';

/** Fields a worker may change together with a state change. */
export interface OperationPatch {
  readonly resourceId?: string;
  readonly result?: OperationRecord['result'];
  readonly error?: OperationRecord['error'];
  readonly expiresAt?: number;
  readonly dispatched?: boolean;
  /** Epoch ms before which no worker claims the operation again (backoff); releases the lease unless `releaseLease: false`. */
  readonly nextAttemptAt?: number;
  /** Give up the lease after this change (the operation waits for backoff or is final). */
  readonly releaseLease?: boolean;
}

export interface TransitionRequest extends SignalOption {
  /** The lease holder; the change is refused (undefined) if another worker holds the lease. */
  readonly workerId: string;
  /** The change applies only if the operation is in one of these states. */
  readonly from: readonly OperationState[];
  readonly to: OperationState;
  readonly now: number;
  readonly patch?: OperationPatch;
}

export interface AttemptStart extends SignalOption {
  readonly workerId: string;
  readonly attemptId: string;
  readonly now: number;
  /** The operation must be in one of these states; it moves to `running` (`cancel_requested` stays). */
  readonly from: readonly OperationState[];
}

/** An operator's resolution of an outcome_unknown operation, or correction of a failed or cancelled one. */
export interface Resolution extends OperatorResolution, SignalOption {}

/**
 * A lease holder's state change; undefined when refused (lease not held, state not in `from`). A
 * change to a state that is not active closes, in the same write, every attempt still open with
 * that state, so none stays open if the worker dies before `finishAttempt`.
 */
export async function transition(
  ledger: OperationsLedger,
  operationId: string,
  request: TransitionRequest,
): Promise<OperationRecord | undefined> {
  const { record, written } = await ledger.update(
    operationId,
    (current) => {
      const change = transitionChange(current, request);
      if (change === undefined) return undefined;
      const to = change.status ?? current.status;
      return isActive(to)
        ? { change }
        : { change, closeOpenAttempts: { ...closedWithState(to), at: request.now } };
    },
    request,
  );
  return written ? record : undefined;
}

/**
 * Records an attempt BEFORE the caller contacts the provider: running (a `cancel_requested`
 * operation stays so), counted, dispatched, with its attempt row. Undefined when refused.
 */
export async function startAttempt(
  ledger: OperationsLedger,
  operationId: string,
  start: AttemptStart,
): Promise<OperationRecord | undefined> {
  const { record, written } = await ledger.update(
    operationId,
    (current) => {
      const change = attemptChange(current, start);
      if (change === undefined) return undefined;
      return {
        change,
        startAttempt: { attemptId: start.attemptId, workerId: start.workerId, startedAt: start.now },
      };
    },
    start,
  );
  return written ? record : undefined;
}

/**
 * Moves `accepted`/`running` to `cancel_requested`; any other state stays as it is. Answers the
 * record as it is now, or undefined for an unknown operation.
 */
export async function requestCancel(
  ledger: OperationsLedger,
  operationId: string,
  now: number,
  options: SignalOption = {},
): Promise<OperationRecord | undefined> {
  const { record } = await ledger.update(
    operationId,
    (current) => {
      const change = cancelChange(current, now);
      return change === undefined ? undefined : { change };
    },
    options,
  );
  return record;
}

/**
 * Settles an `outcome_unknown` operation, or with `correct` changes `failed`/`cancelled` to
 * `succeeded`, appending to its audit; anything else throws `invalid_argument` and writes nothing.
 */
export async function resolve(
  ledger: OperationsLedger,
  operationId: string,
  resolution: Resolution,
): Promise<OperationRecord | undefined> {
  const { record } = await ledger.update(
    operationId,
    (current) => ({ change: resolutionChange(current, resolution) }),
    resolution,
  );
  return record;
}
