import { isIdemError, type IdemStore, type JsonObject } from 'idem';
import type { OperationRecord, OperationState, OutboxMessage } from 'idem/store';
import {
  givenFieldsProblem,
  requestOperatorCancel,
  resolveOperation,
  type OperatorCancelResult,
  type SuccessFieldsByOperation,
} from 'idem/operations';
import { deploymentFields } from '../server/deployment-handler.js';
import { OperatorActionError } from './operator-error.js';

/**
 * The reference server's durable operations: how a success that an operator establishes gets the
 * fields of one the worker records (its handler, src/server/deployment-handler.ts, knows them; see
 * resolveOperation).
 */
export const REFERENCE_OPERATIONS: SuccessFieldsByOperation = {
  start_deployment: { successFields: deploymentFields },
};

/** An operator's settlement of one operation, as `idem ops resolve` and the console take it. */
export interface ResolveRequest {
  readonly operationId: string;
  /** What the operator established at the provider. */
  readonly to: 'succeeded' | 'failed';
  /**
   * Change a `failed` or `cancelled` operation, or a success a person settled, to succeeded (never
   * to failed).
   */
  readonly correct?: boolean;
  /**
   * The status the operator saw (the console's page sends it): the change is refused when the
   * operation has moved on since. Absent with `correct` (`idem ops resolve --correct`, a command
   * run after looking): the status read now.
   */
  readonly from?: OperationState;
  /** Required for `succeeded`: the provider's id of the effect. */
  readonly resourceId?: string;
  /** Business fields of the success (checked against what the tool's results carry). */
  readonly fields?: JsonObject;
  /** Why: required for `failed` and for a correction. */
  readonly reason?: string;
  /** Who: kept in the audit. */
  readonly by: string;
  /** When, epoch ms. */
  readonly now: number;
  /** How long the settled operation replays, ms. */
  readonly retentionMs: number;
}

function blank(text: string | undefined): boolean {
  return text === undefined || text.trim() === '';
}

/**
 * Resolves an `outcome_unknown` operation (or, with `correct`, corrects a `failed` or `cancelled`
 * one, or a success a person settled, to succeeded), recording who, when and why in its audit, through the library's
 * resolveOperation. Every rule is checked before anything is written; a refusal throws
 * OperatorActionError (`usage` for a wrong request, naming its field; `not_found`; `refused` for a
 * state that does not allow it). Answers the record as written.
 */
export async function resolveOperationAsOperator(
  store: Pick<IdemStore, 'ledger' | 'tools'>,
  request: ResolveRequest,
): Promise<OperationRecord> {
  const succeeded = request.to === 'succeeded';
  if (succeeded && blank(request.resourceId))
    throw new OperatorActionError('usage', 'a success needs the resource id', { field: 'resource_id' });
  if (!succeeded && blank(request.reason))
    throw new OperatorActionError('usage', 'a failure needs a reason', { field: 'reason' });
  if (request.correct === true && !succeeded)
    throw new OperatorActionError('usage', 'a correction is to succeeded only', { field: 'to' });
  if (request.correct === true && blank(request.reason))
    throw new OperatorActionError('usage', 'a correction needs a reason', { field: 'reason' });
  if (request.fields !== undefined && !succeeded)
    throw new OperatorActionError('usage', 'result fields go with a success only', { field: 'fields' });
  const resourceId = request.resourceId;
  if (request.fields !== undefined) {
    const current = await store.ledger.get(request.operationId);
    const problem =
      current === undefined
        ? undefined
        : givenFieldsProblem(
            current,
            REFERENCE_OPERATIONS,
            { to: 'succeeded', resourceId, fields: request.fields },
            (await store.tools.get(current.identity.operation, current.identity.version)) ?? null,
          );
    if (problem !== undefined) throw new OperatorActionError('usage', problem, { field: 'fields' });
  }
  const from =
    request.from ??
    (request.correct === true ? (await store.ledger.get(request.operationId))?.status : undefined);
  let record: OperationRecord | undefined;
  try {
    record = await resolveOperation(store, REFERENCE_OPERATIONS, request.operationId, {
      to: request.to,
      by: request.by,
      now: request.now,
      expiresAt: request.now + request.retentionMs,
      ...(resourceId === undefined ? {} : { resourceId }),
      ...(request.reason === undefined ? {} : { reason: request.reason }),
      ...(request.correct === true ? { correct: true } : {}),
      ...(from === undefined ? {} : { from }),
      ...(request.fields === undefined ? {} : { fields: request.fields }),
    });
  } catch (error) {
    if (isIdemError(error) && error.code === 'invalid_argument') {
      const current = request.correct === true ? undefined : await store.ledger.get(request.operationId);
      const correctable =
        current?.status === 'failed' ||
        current?.status === 'cancelled' ||
        (current?.status === 'succeeded' && current.resolvedBy !== undefined && succeeded);
      throw new OperatorActionError('refused', error.message, { correctable });
    }
    throw error;
  }
  if (record === undefined) throw new OperatorActionError('not_found', `no operation ${request.operationId}`);
  return record;
}

/** An operator's cancel request: who, when, why. */
export interface CancelRequest {
  readonly operationId: string;
  readonly reason: string;
  readonly by: string;
  readonly now: number;
}

/**
 * Asks for an `accepted` or `running` operation to be cancelled, with the request (who, when, why)
 * in its audit: the cancel tool's move, made by an operator (requestOperatorCancel). A blank reason
 * is `usage`, an unknown operation `not_found`, an operation in any other state `refused`.
 */
export async function requestCancelAsOperator(
  store: Pick<IdemStore, 'ledger'>,
  request: CancelRequest,
): Promise<OperatorCancelResult> {
  if (blank(request.reason))
    throw new OperatorActionError('usage', 'a cancel request needs a reason', { field: 'reason' });
  const result = await requestOperatorCancel(store.ledger, request.operationId, {
    by: request.by,
    now: request.now,
    reason: request.reason,
  });
  if (result === undefined) throw new OperatorActionError('not_found', `no operation ${request.operationId}`);
  if (result.cancel === 'already_final')
    throw new OperatorActionError(
      'refused',
      `operation ${request.operationId} is ${result.record.status}; only an accepted or running operation can be cancelled`,
    );
  return result;
}

/**
 * Makes a dead letter due again with its attempts counted from 0 (the outbox's `requeue`);
 * `not_found` when there is no dead letter with that id.
 */
export async function requeueDeadLetter(
  store: Pick<IdemStore, 'outbox'>,
  id: number,
  now: number,
): Promise<OutboxMessage> {
  const requeued = await store.outbox.requeue(id, now);
  if (requeued === undefined) throw new OperatorActionError('not_found', `no dead letter ${id}`);
  return requeued;
}
