import { IdemError } from './errors.js';
import type { JsonObject } from './json.js';
import type { OperationRecord, OperatorChange } from './operation-record.js';
import { assertTransition, canTransition, type OperationState } from './operation-state.js';
import { succeededResult } from './success-result.js';

/** The new values of an operation's mutable fields; absent keys keep their current value. */
export type RecordChange = Partial<Omit<OperationRecord, 'operationId' | 'identity'>> & {
  /** Backoff: no worker claims the operation before this (epoch ms); unset clears it. */
  nextAttemptAt?: number | undefined;
};

/** Fencing: only the owner of an unexpired lease may change an operation. */
export function holdsLease(
  record: OperationRecord | undefined,
  workerId: string,
  now: number,
): record is OperationRecord {
  return (
    record !== undefined &&
    record.leaseOwner === workerId &&
    record.leaseExpiresAt !== undefined &&
    record.leaseExpiresAt > now
  );
}

/**
 * A worker's state change, or undefined when it must not apply (lease not held, or the state is not
 * one of `from`). An illegal move per the transition table throws `invalid_argument`. Every store
 * computes changes here and only writes them, so both engines keep exactly the same rules.
 */
export function transitionChange(
  current: OperationRecord | undefined,
  request: {
    workerId: string;
    from: readonly OperationState[];
    to: OperationState;
    now: number;
    patch?: {
      resourceId?: string;
      result?: OperationRecord['result'];
      error?: OperationRecord['error'];
      expiresAt?: number;
      dispatched?: boolean;
      nextAttemptAt?: number;
      releaseLease?: boolean;
    };
  },
): RecordChange | undefined {
  if (!holdsLease(current, request.workerId, request.now) || !request.from.includes(current.status))
    return undefined;
  assertTransition(current.status, request.to);
  const patch = request.patch ?? {};
  const release = patch.releaseLease ?? patch.nextAttemptAt !== undefined;
  return {
    status: request.to,
    resourceId: patch.resourceId ?? current.resourceId,
    result: patch.result ?? current.result,
    error: patch.error ?? current.error,
    expiresAt: patch.expiresAt ?? current.expiresAt,
    dispatched: patch.dispatched ?? current.dispatched,
    nextAttemptAt: patch.nextAttemptAt,
    leaseOwner: release ? undefined : current.leaseOwner,
    leaseExpiresAt: release ? undefined : current.leaseExpiresAt,
    updatedAt: request.now,
  };
}

/**
 * Starting an attempt: running, counted, dispatched. A resend after a cancel request (to learn
 * whether an earlier attempt was applied) keeps `cancel_requested`. Undefined when it must not apply.
 */
export function attemptChange(
  current: OperationRecord | undefined,
  start: { workerId: string; now: number; from: readonly OperationState[] },
): RecordChange | undefined {
  if (!holdsLease(current, start.workerId, start.now) || !start.from.includes(current.status))
    return undefined;
  const status = current.status === 'cancel_requested' ? 'cancel_requested' : 'running';
  assertTransition(current.status, status);
  return {
    status,
    attemptCount: current.attemptCount + 1,
    dispatched: true,
    updatedAt: start.now,
  };
}

/** A cancellation request: only accepted or running operations change; undefined leaves it as is. */
export function cancelChange(current: OperationRecord, now: number): RecordChange | undefined {
  if (current.status !== 'accepted' && current.status !== 'running') return undefined;
  return { status: 'cancel_requested', cancelRequestedAt: now, updatedAt: now };
}

/** An operator's resolution or correction of an operation, as `Store.resolve` receives it. */
export interface OperatorResolution {
  /** The state the operator established. */
  readonly to: 'succeeded' | 'failed';
  /** Who settles it (a name or an email): kept in the record's audit. */
  readonly by: string;
  /** When, epoch ms (the clock's `now()`). */
  readonly now: number;
  /** Required for `succeeded`: the resource the operator found at the external system. */
  readonly resourceId?: string;
  /**
   * Business fields of the success, beside status, operation_id and resource_id (a handler's
   * `successFields`), so that a resolved success has the shape of one the worker recorded.
   */
  readonly fields?: JsonObject;
  /** Required for a correction; for `failed` it becomes part of the stored error. */
  readonly reason?: string;
  /** Epoch ms until which the settled record replays (usually `now` + the tool's retention). */
  readonly expiresAt: number;
  /**
   * Correct a final `failed` or `cancelled` operation to `succeeded` (the effect was found to
   * exist), or a success a person settled to another success (another resource id or other
   * fields; only with `from: 'succeeded'`). Without it only an `outcome_unknown` operation can be
   * settled.
   */
  readonly correct?: boolean;
  /**
   * The status the person saw when deciding. Given: the change is refused (`invalid_argument`,
   * nothing written) when the operation is in another status now. A success a person settled is
   * corrected only with `from: 'succeeded'`, so that a correction decided on a failed or cancelled
   * operation never overwrites a success another person settled meanwhile.
   */
  readonly from?: OperationState;
}

/**
 * An operator's settlement of an outcome_unknown operation, or correction of a failed or cancelled
 * one (or of a success a person settled) to succeeded; either is appended to the record's audit (who, when, the state before, why).
 * Anything else throws `invalid_argument`, and the caller writes nothing.
 */
export function resolutionChange(current: OperationRecord, resolution: OperatorResolution): RecordChange {
  const correct = resolution.correct === true;
  const refused = (why: string) =>
    new IdemError('invalid_argument', `operation ${current.operationId} is ${current.status}; ${why}`);
  // A success a person settled can be corrected by a person (another resource id or other fields),
  // so that an operator's mistake is never final; one the worker recorded rests on the provider's
  // own answer and is not.
  if (resolution.from !== undefined && current.status !== resolution.from)
    throw refused(`it was ${resolution.from} when the change was decided; look at it again`);
  const personsSuccess =
    correct &&
    resolution.from === 'succeeded' &&
    current.status === 'succeeded' &&
    current.resolvedBy !== undefined &&
    resolution.to === 'succeeded';
  if (correct) {
    if (!personsSuccess && !canTransition(current.status, resolution.to, 'correction'))
      throw refused(
        'only a failed or cancelled operation, or a success a person settled, can be corrected, and only to succeeded',
      );
    if (resolution.reason === undefined || resolution.reason.trim() === '')
      throw new IdemError('invalid_argument', 'a correction needs a reason');
  } else if (current.status !== 'outcome_unknown') {
    const hint =
      current.status === 'failed' || current.status === 'cancelled'
        ? '; if its effect exists after all, correct it to succeeded (with a reason)'
        : '';
    throw refused(`only an outcome_unknown operation can be resolved${hint}`);
  }
  if (!personsSuccess) assertTransition(current.status, resolution.to, correct ? 'correction' : 'operator');
  const succeeded = resolution.to === 'succeeded';
  const resourceId = resolution.resourceId ?? '';
  if (succeeded && resourceId === '')
    throw new IdemError('invalid_argument', 'settling an operation as succeeded needs its resource id');
  const change: OperatorChange = {
    action: correct ? 'correct' : 'resolve',
    by: resolution.by,
    at: resolution.now,
    from: current.status,
    to: resolution.to,
    ...(resolution.reason === undefined ? {} : { reason: resolution.reason }),
    ...(succeeded ? { resourceId } : {}),
    ...(current.error === undefined ? {} : { previousError: current.error }),
    ...(personsSuccess && current.result !== undefined ? { previousResult: current.result } : {}),
  };
  return {
    status: resolution.to,
    resourceId: succeeded ? resourceId : current.resourceId,
    result: succeeded ? succeededResult(current.operationId, resourceId, resolution.fields) : current.result,
    error: succeeded
      ? undefined
      : {
          code: 'internal',
          message: `resolved as failed by ${resolution.by}: ${resolution.reason ?? ''}`.trim(),
        },
    dispatched: false,
    leaseOwner: undefined,
    leaseExpiresAt: undefined,
    expiresAt: resolution.expiresAt,
    resolvedBy: resolution.by,
    resolvedAt: resolution.now,
    updatedAt: resolution.now,
    audit: [...(current.audit ?? []), change],
  };
}

/** How a store closes an attempt that its worker left open. */
export interface AttemptClosure {
  readonly outcome: string;
  readonly detail: string;
}

/**
 * An attempt still open when another worker claims its operation: its worker stopped (or lost its
 * lease) before recording how the attempt ended. If it records that later, its own outcome wins.
 */
export function interruptedAttempt(claimedBy: string): AttemptClosure {
  return {
    outcome: 'interrupted',
    detail: `interrupted: no outcome recorded; closed when ${claimedBy} claimed`,
  };
}

/**
 * An attempt still open when its operation leaves the active states (its worker records the final
 * state first, then finishes the attempt, and may die in between): closed with that state.
 */
export function closedWithState(state: OperationState): AttemptClosure {
  return { outcome: state, detail: `closed with the operation's ${state} record` };
}
