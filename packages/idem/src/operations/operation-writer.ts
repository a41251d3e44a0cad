import type { Clock } from '../core/clock.js';
import type { ErrorCode } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { LogFields, Logger } from '../core/logger.js';
import { operationLabel } from '../core/operation-identity.js';
import type { OperationError, OperationRecord } from '../core/operation-record.js';
import { isActive, type OperationState } from '../core/operation-state.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { transition, type OperationPatch } from './ledger-transitions.js';
import type { Applied, DurableHandler, UnknownOutcomeContext } from './durable-handler.js';
import { providerKeyFor } from './durable-handler.js';
import { successResult } from './operation-budget.js';

/** What to do after a write: the record to apply the rules to again, or undefined (done here). */
export type Next = OperationRecord | undefined;

/** Where a worker may settle an operation it has dispatched: running, or cancelled meanwhile. */
export const SETTLE_FROM: readonly OperationState[] = ['running', 'cancel_requested'];

export interface OperationWriterOptions {
  readonly ledger: OperationsLedger;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly workerId: string;
  readonly retentionMs: number;
}

/**
 * A worker's state writes, each one a `transition` guarded by its lease and a `from` list.
 * When the store refuses a write, `reread` decides what follows: if this worker still holds the
 * lease and the operation is still active (e.g. a cancel arrived), the fresh record goes back
 * through the rules; otherwise another worker owns it now and this one stops. Final writes release
 * the lease; every final state but `outcome_unknown` gets `expiresAt = now + retentionMs`.
 */
export class OperationWriter {
  readonly #options: OperationWriterOptions;

  constructor(options: OperationWriterOptions) {
    this.#options = options;
  }

  /** One guarded state write. */
  async write(
    op: OperationRecord,
    from: readonly OperationState[],
    to: OperationState,
    patch: OperationPatch,
  ): Promise<Next> {
    const { ledger, clock, workerId } = this.#options;
    const written = await transition(ledger, op.operationId, { workerId, from, to, now: clock.now(), patch });
    if (written === undefined) return this.reread(op);
    if (isActive(written.status)) return written;
    this.#logFinal(written);
    return undefined;
  }

  /** `succeeded` with the applied resource and the stored result; wins over a concurrent cancel. */
  succeed(op: OperationRecord, applied: Applied): Promise<Next> {
    return this.write(op, SETTLE_FROM, 'succeeded', {
      resourceId: applied.resourceId,
      result: successResult(op, applied),
      dispatched: false,
      ...this.#final(),
    });
  }

  /**
   * `failed`: nothing was applied, or (with `evidence`, a handler's `failed` outcome) the effect
   * ran to an established unsuccessful end; either way `dispatched` is cleared and the evidence
   * is kept as the record's result.
   */
  fail(
    op: OperationRecord,
    from: readonly OperationState[],
    code: ErrorCode,
    message: string,
    evidence?: JsonObject,
  ): Promise<Next> {
    const error: OperationError = { code, message };
    const result = evidence === undefined ? {} : { result: evidence };
    return this.write(op, from, 'failed', { error, ...result, dispatched: false, ...this.#final() });
  }

  /**
   * `cancelled`: for a cancel request when nothing was or will be applied, or (with `evidence`) when
   * the handler stopped its effect on that request before it ended by itself.
   */
  cancel(op: OperationRecord, evidence?: JsonObject): Promise<Next> {
    const result = evidence === undefined ? {} : { result: evidence };
    return this.write(op, ['cancel_requested'], 'cancelled', {
      ...result,
      dispatched: false,
      ...this.#final(),
    });
  }

  /**
   * `outcome_unknown`, with the handler's sentence on what to check at the external system (`why`
   * adds to its context, e.g. that the provider may have forgotten the key). No `expiresAt`: it is
   * not final until an operator resolves it, which sets the retention.
   */
  unknown(
    op: OperationRecord,
    handler: DurableHandler,
    reason: string,
    why: Pick<UnknownOutcomeContext, 'keyRetentionPassedMs'> = {},
  ): Promise<Next> {
    const error: OperationError = {
      code: 'outcome_unknown',
      message: `the outcome of the external call is unknown: ${reason}`,
      nextAction: handler.nextAction(op, {
        providerKey: providerKeyFor(op.operationId),
        from: op.createdAt,
        to: this.#options.clock.now(),
        ...why,
      }),
    };
    return this.write(op, SETTLE_FROM, 'outcome_unknown', { error, dispatched: true, releaseLease: true });
  }

  /** The record again, if this worker still holds its lease and it is still active. */
  async reread(op: OperationRecord): Promise<Next> {
    const { ledger, clock, logger, workerId } = this.#options;
    const fresh = await ledger.get(op.operationId);
    if (fresh === undefined || !isActive(fresh.status)) return undefined;
    if (fresh.leaseOwner !== workerId || (fresh.leaseExpiresAt ?? 0) <= clock.now()) {
      logger.warn('op.lease_lost', this.fields(fresh));
      return undefined;
    }
    return fresh;
  }

  /** Log fields naming an operation: ids and the tool label, never arguments. */
  fields(op: OperationRecord): LogFields {
    return {
      operation_id: op.operationId,
      worker_id: this.#options.workerId,
      tool: operationLabel(op.identity),
    };
  }

  #final(): { expiresAt: number; releaseLease: true } {
    return { expiresAt: this.#options.clock.now() + this.#options.retentionMs, releaseLease: true };
  }

  #logFinal(op: OperationRecord): void {
    const fields: LogFields = {
      ...this.fields(op),
      outcome: op.status,
      attempts: op.attemptCount,
      error_code: op.error?.code,
      ...stopReasonField(op),
    };
    if (op.status === 'succeeded' || op.status === 'cancelled') this.#options.logger.info('op.final', fields);
    else this.#options.logger.warn('op.final', fields);
  }
}

/**
 * The worker's own stops, as operation-budget's stopMessage words them: a failure the worker decides
 * when the budget runs out (deadline, attempts, a Retry-After past the deadline). It is stored with the
 * code `internal` although nothing crashed, so a retry answers `internal`: op.final names the stop
 * (a fixed name, never the message, which may quote an attempt's detail).
 */
const STOPS: readonly (readonly [prefix: string, name: string])[] = [
  ['deadline exhausted', 'deadline_exhausted'],
  ['attempts exhausted', 'attempts_exhausted'],
  ['retry_after_beyond_deadline', 'retry_after_beyond_deadline'],
];

function stopReasonField(op: OperationRecord): LogFields {
  if (op.status !== 'failed' || op.error?.code !== 'internal') return {};
  const stop = STOPS.find(([prefix]) => op.error?.message.startsWith(prefix) === true);
  return stop === undefined ? {} : { stop_reason: stop[1] };
}
