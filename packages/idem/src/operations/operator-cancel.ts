import { IdemError } from '../core/errors.js';
import { cancelChange } from '../core/operation-changes.js';
import type { OperationRecord, OperatorChange } from '../core/operation-record.js';
import type { SignalOption } from '../ports/maybe-async.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';

/** An operator's request to cancel an operation: who, when and why (all kept in its audit). */
export interface OperatorCancel extends SignalOption {
  /** Who asks (a name or an email). */
  readonly by: string;
  /** When, epoch ms. */
  readonly now: number;
  /** Why; required, non-blank. */
  readonly reason: string;
}

/** What an operator's cancel request did, in the words of the cancel tool. */
export interface OperatorCancelResult {
  /** The record as it is now. */
  readonly record: OperationRecord;
  /**
   * `requested`: it moved to `cancel_requested` (and the request is in its audit);
   * `already_requested`: it was `cancel_requested` before; `already_final`: it had ended (or is
   * `outcome_unknown`), nothing was written.
   */
  readonly cancel: 'requested' | 'already_requested' | 'already_final';
}

/**
 * Asks, as an operator, for an `accepted` or `running` operation to be cancelled: the same move as
 * the cancel tool's (to `cancel_requested`; it becomes `cancelled` only once the worker establishes
 * that nothing was or will be done), with an audit entry (`action: 'cancel'`, by, at, reason)
 * written in the same transaction. Any other state is left as it is. Answers undefined for an
 * unknown operation; a blank reason is `invalid_argument` and writes nothing.
 */
export async function requestOperatorCancel(
  ledger: OperationsLedger,
  operationId: string,
  request: OperatorCancel,
): Promise<OperatorCancelResult | undefined> {
  if (request.reason.trim() === '')
    throw new IdemError('invalid_argument', 'a cancel request needs a reason');
  let before: OperationRecord | undefined;
  const { record } = await ledger.update(
    operationId,
    (current) => {
      before = current;
      const change = cancelChange(current, request.now);
      if (change === undefined) return undefined;
      const entry: OperatorChange = {
        action: 'cancel',
        by: request.by,
        at: request.now,
        from: current.status,
        to: 'cancel_requested',
        reason: request.reason,
      };
      return { change: { ...change, audit: [...(current.audit ?? []), entry] } };
    },
    request,
  );
  if (record === undefined || before === undefined) return undefined;
  const cancel =
    before.status === 'cancel_requested'
      ? 'already_requested'
      : record.status === 'cancel_requested'
        ? 'requested'
        : 'already_final';
  return { record, cancel };
}
