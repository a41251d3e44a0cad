import { ERROR_CODES, IdemError, type ErrorCode } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';

/** The `status` a caller sees when it differs from what the error code implies. */
export type OutcomeStatus = 'running' | 'failed' | 'outcome_unknown';

export type CallOutcome =
  | {
      readonly ok: true;
      /** The stored result, unchanged (or the handle of an accepted/cancelled operation). */
      readonly result: JsonObject;
      readonly replayed: boolean;
      readonly operationId: string;
      readonly attemptId: string;
    }
  | {
      readonly ok: false;
      readonly error: IdemError;
      readonly attemptId: string;
      readonly status?: OutcomeStatus;
    };

/** How to follow an operation: the sentence every unfinished or uncertain result carries. */
export function followUp(operationId: string): string {
  return `Call get_operation with operation_id ${operationId} to see its state; retrying with the same idempotency_key and arguments is also safe.`;
}

/** What a caller is told about an operation in its current state. */
export function outcomeOf(record: OperationRecord, replayed: boolean, attemptId: string): CallOutcome {
  const operationId = record.operationId;
  switch (record.status) {
    case 'succeeded':
      return {
        ok: true,
        result: record.result ?? {
          status: 'succeeded',
          operation_id: operationId,
          resource_id: record.resourceId ?? null,
        },
        replayed,
        operationId,
        attemptId,
      };
    case 'cancelled':
      return {
        ok: true,
        // A handler that stopped its effect on request (a command) stored what it had done so far.
        result: record.result ?? {
          status: 'cancelled',
          operation_id: operationId,
          next_action: 'Nothing was done. Use a new idempotency_key to try again.',
        },
        replayed,
        operationId,
        attemptId,
      };
    case 'accepted':
      if (!replayed) {
        return {
          ok: true,
          result: { status: 'accepted', operation_id: operationId, next_action: followUp(operationId) },
          replayed,
          operationId,
          attemptId,
        };
      }
    // falls through: a retry of an operation that has not finished reports it as running
    case 'running':
    case 'cancel_requested':
      return {
        ok: false,
        status: 'running',
        attemptId,
        error: new IdemError('in_progress', `operation ${operationId} is still ${record.status}`, {
          operationId,
          retryAfterMs: 1000,
          nextAction: followUp(operationId),
        }),
      };
    case 'failed':
      return {
        ok: false,
        status: 'failed',
        attemptId,
        error: new IdemError(
          storedCode(record.error?.code),
          record.error?.message ?? 'the operation failed',
          {
            operationId,
            retryable: false,
            ...(record.error?.nextAction === undefined ? {} : { nextAction: record.error.nextAction }),
          },
        ),
      };
    case 'outcome_unknown':
      return {
        ok: false,
        status: 'outcome_unknown',
        attemptId,
        error: new IdemError(
          'outcome_unknown',
          record.error?.message ?? 'the outcome could not be established',
          {
            operationId,
            retryable: false,
            nextAction:
              record.error?.nextAction ??
              `An operator must check whether the action took effect and settle operation ${operationId} (idem ops resolve).`,
          },
        ),
      };
  }
}

function storedCode(code: string | undefined): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code ?? '') ? (code as ErrorCode) : 'internal';
}
