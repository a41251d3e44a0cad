import type { JsonObject } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { RetryPlan, RetryPolicy } from '../core/retry-policy.js';
import { succeededResult } from '../core/success-result.js';
import type { Applied } from './durable-handler.js';

export interface Budget {
  /** The worker's policy with `totalMs` narrowed to the operation's own deadline, if earlier. */
  readonly policy: RetryPolicy;
  /** Wall-clock ms since the operation was accepted (it spans processes, so not monotonic). */
  readonly elapsedMs: number;
  /** What is left of the total budget; 0 or less means the deadline has passed. */
  readonly remainingMs: number;
}

/**
 * The budget of a durable operation at `now`. Both the operation's `deadlineAt` and the policy's
 * `totalMs` bound it, counted from `createdAt`; the earlier wins. Elapsed time is measured on the
 * wall clock because the operation outlives any one process (monotonic time is per process).
 */
export function operationBudget(policy: RetryPolicy, operation: OperationRecord, now: number): Budget {
  const elapsedMs = Math.max(0, now - operation.createdAt);
  const totalMs =
    operation.deadlineAt === undefined
      ? policy.totalMs
      : Math.min(policy.totalMs, operation.deadlineAt - operation.createdAt);
  return { policy: { ...policy, totalMs }, elapsedMs, remainingMs: totalMs - elapsedMs };
}

export type StopReason = Extract<RetryPlan, { retry: false }>['reason'];

/**
 * The stored message of a durable operation that gave up without applying anything, e.g.
 * `deadline exhausted after 3 attempts: throttled (HTTP 503)`. The snake_case reason stays
 * greppable for `retry_after_beyond_deadline`. With `reached` (the attempts that may have reached
 * the provider) below `attempts`, it says how many did, e.g. `deadline exhausted after 9 attempts,
 * none of which reached the provider (nothing was done): connection refused`.
 */
export function stopMessage(
  reason: StopReason,
  attempts: number,
  lastReason: string,
  reached = attempts,
): string {
  const what =
    reason === 'deadline_exhausted'
      ? 'deadline exhausted'
      : reason === 'attempts_exhausted'
        ? 'attempts exhausted'
        : 'retry_after_beyond_deadline: the provider asked to wait beyond the deadline';
  const sent =
    reached >= attempts
      ? ''
      : reached === 0
        ? ', none of which reached the provider (nothing was done)'
        : `, ${reached} of which reached the provider`;
  return `${what} after ${attempts} attempt${attempts === 1 ? '' : 's'}${sent}: ${lastReason}`;
}

/** The stored result of a succeeded durable operation, as every replay will return it. */
export function successResult(operation: OperationRecord, applied: Applied): JsonObject {
  return succeededResult(operation.operationId, applied.resourceId, applied.fields);
}
