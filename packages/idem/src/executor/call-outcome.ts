import { ERROR_CODES, IdemError, type ErrorCode, type NextStep } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { ReceiptView } from '../core/receipt.js';

/** The `status` a caller sees when it differs from what the error code implies. */
export type OutcomeStatus = 'running' | 'failed' | 'outcome_unknown';

/**
 * How a call ended, never thrown: `ok` with the stored result (`replayed` when an earlier call made
 * it), or an `IdemError` with its stable code, and for a stored operation its status and evidence.
 */
export type CallOutcome =
  | {
      readonly ok: true;
      /** The stored result, unchanged (or the handle of an accepted/cancelled operation). */
      readonly result: JsonObject;
      readonly replayed: boolean;
      readonly operationId: string;
      readonly attemptId: string;
      /** What the caller does next (an accepted or cancelled operation); the front end words it. */
      readonly nextStep?: NextStep;
    }
  | {
      readonly ok: false;
      readonly error: IdemError;
      readonly attemptId: string;
      readonly status?: OutcomeStatus;
      /** Set when the answer is a stored operation's (`failed`, `outcome_unknown`): true on a replay. */
      readonly replayed?: boolean;
      /** A stored operation's evidence beside its error, as its status view shows it. */
      readonly evidence?: OutcomeEvidence;
    };

/**
 * What a `failed` or `outcome_unknown` operation's record holds beside its error: the attempts made
 * and, when the worker kept one, the result it stored as evidence (a command's exit code and output
 * summary). A replay answers it as `get_operation` shows it.
 */
export interface OutcomeEvidence {
  readonly attempts: number;
  readonly result?: JsonObject;
}

/**
 * What a caller is told about an operation in its current state: facts only. An unfinished or
 * uncertain operation carries a `nextStep` (and its id) instead of a sentence; the MCP layer words it
 * with its own tool names (src/mcp/follow-up.ts), so nothing here names a tool or a command.
 */
export function outcomeOf(record: ReceiptView, replayed: boolean, attemptId: string): CallOutcome {
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
        result: record.result ?? { status: 'cancelled', operation_id: operationId },
        replayed,
        operationId,
        attemptId,
        // "Nothing was done" holds only when the worker stored no account of what was.
        ...(record.result === undefined ? { nextStep: 'new_key' as const } : {}),
      };
    case 'accepted':
      if (!replayed) {
        return {
          ok: true,
          result: { status: 'accepted', operation_id: operationId },
          replayed,
          operationId,
          attemptId,
          nextStep: 'follow_operation',
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
          nextStep: 'follow_operation',
        }),
      };
    case 'failed':
      return {
        ok: false,
        status: 'failed',
        attemptId,
        replayed,
        evidence: evidenceOf(record),
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
        replayed,
        evidence: evidenceOf(record),
        error: new IdemError(
          'outcome_unknown',
          record.error?.message ?? 'the outcome could not be established',
          {
            operationId,
            retryable: false,
            // The handler's own sentence (what to check at the provider) wins when there is one.
            ...(record.error?.nextAction === undefined ? {} : { nextAction: record.error.nextAction }),
            nextStep: 'operator_settles',
          },
        ),
      };
  }
}

function evidenceOf(record: ReceiptView): OutcomeEvidence {
  return {
    attempts: record.attemptCount,
    ...(record.result === undefined ? {} : { result: record.result }),
  };
}

function storedCode(code: string | undefined): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code ?? '') ? (code as ErrorCode) : 'internal';
}
