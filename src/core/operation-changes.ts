import { IdemError } from './errors.js';
import type { OperationRecord } from './operation-record.js';
import { assertTransition, type OperationState } from './operation-state.js';

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

/** An operator's settlement of an outcome_unknown operation, recorded with who and when. */
export function resolutionChange(
  current: OperationRecord,
  resolution: {
    to: 'succeeded' | 'failed';
    by: string;
    now: number;
    resourceId?: string;
    reason?: string;
    expiresAt: number;
  },
): RecordChange {
  if (current.status !== 'outcome_unknown') {
    throw new IdemError(
      'invalid_argument',
      `operation ${current.operationId} is ${current.status}; only an outcome_unknown operation can be resolved`,
    );
  }
  assertTransition(current.status, resolution.to, 'operator');
  const succeeded = resolution.to === 'succeeded';
  return {
    status: resolution.to,
    resourceId: succeeded ? resolution.resourceId : current.resourceId,
    result: succeeded
      ? { status: 'succeeded', operation_id: current.operationId, resource_id: resolution.resourceId ?? null }
      : current.result,
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
  };
}
