import type { Clock } from '../core/clock.js';
import type { FaultPoints } from '../core/fault-points.js';
import { newAttemptId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { OperationRecord } from '../core/operation-record.js';
import { attemptTimeout, minAttempt, planRetry, type RetryPolicy } from '../core/retry-policy.js';
import type { Store } from '../store/store.js';
import { providerKeyFor, type DispatchOutcome, type DurableHandler } from './durable-handler.js';
import { operationBudget, stopMessage, type StopReason } from './operation-budget.js';
import { errorMessage } from './polling-loop.js';
import { SETTLE_FROM, type Next, type OperationWriter } from './operation-writer.js';

export interface OperationProcessorOptions {
  readonly store: Store<unknown>;
  readonly writer: OperationWriter;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly workerId: string;
  readonly policy: RetryPolicy;
  readonly faults: FaultPoints;
  readonly random: () => number;
}

/**
 * The rules by which a worker carries one leased operation. `step` applies this table once and
 * answers the record to apply it to again (after a refused write, a reconciliation, …) or
 * undefined. "dispatched" means an attempt may have reached the provider and its outcome is not
 * established; mode is the handler's recovery mode.
 *
 * | record                               | mode      | action                                                   |
 * | ------------------------------------ | --------- | -------------------------------------------------------- |
 * | cancel_requested, not dispatched     | any       | `cancelled` (nothing was or will be done)                |
 * | dispatched                           | reference | reconcile: found -> `succeeded`; absent -> `cancelled`   |
 * |                                      |           | if cancel requested, else dispatch again; lookup failed  |
 * |                                      |           | -> backoff (still dispatched) or `outcome_unknown`       |
 * | dispatched, cancel_requested         | key       | `outcome_unknown` (re-sending could deploy)              |
 * | dispatched                           | key       | re-send with the SAME provider key (replays or creates)  |
 * | dispatched                           | none      | `outcome_unknown`, error.nextAction says what to check   |
 * | deadline passed / attempts used up   | any       | dispatched: `outcome_unknown`; else `failed` (internal,  |
 * | (reference reconciles first)         |           | "deadline exhausted after N attempts: <last reason>")    |
 * | otherwise: startAttempt (commits running + dispatched + attempt row), `before_dispatch`, dispatch:  |
 * | - created                            | any       | `after_provider_reply`, `succeeded` (wins over a cancel  |
 * |                                      |           | that arrived meanwhile), finishAttempt, `after_receipt`  |
 * | - rejected (403, 422)                | any       | `failed` forbidden / invalid_argument; never retried     |
 * |                                      |           | (also after a cancel request: the refusal is precise)    |
 * | - throttled (429, 503, refused)      | any       | not dispatched; backoff (Retry-After when it fits the    |
 * |                                      |           | budget) or `failed`; cancel arrived meanwhile: cancelled |
 * | - ambiguous (timeout, reset, 5xx)    | key       | still dispatched; backoff (same key next time) or        |
 * |                                      |           | `outcome_unknown`; cancel arrived: `outcome_unknown`     |
 * |                                      | reference | reconcile at once; absent -> as throttled                |
 * |                                      | none      | `outcome_unknown`                                        |
 *
 * Limits: attempts count `startAttempt`s (a crashed one included); the budget is `operationBudget`.
 * A reconciliation uses the full attempt timeout even past the deadline: it only reads, and it is
 * the one way to learn the truth. Reconciling right after a timeout can miss a request the
 * provider is still processing; a provider that applies requests after the client gave up needs a
 * delay before reconciling, which this reference provider (it commits before replying) does not.
 */
export class OperationProcessor {
  readonly #o: OperationProcessorOptions;

  constructor(options: OperationProcessorOptions) {
    this.#o = options;
  }

  async step(op: OperationRecord, handler: DurableHandler, lease: AbortSignal): Promise<Next> {
    const { writer } = this.#o;
    const cancel = op.status === 'cancel_requested';
    if (op.dispatched) {
      if (handler.mode === 'reference') return this.#reconcile(op, handler, lease, false);
      if (handler.mode === 'none')
        return writer.unknown(op, handler, 'an attempt was interrupted before its outcome was known');
      if (cancel)
        return writer.unknown(op, handler, 'cancel requested, but an earlier attempt may have been applied');
    } else if (cancel) {
      return writer.cancel(op);
    }
    const budget = operationBudget(this.#o.policy, op, this.#o.clock.now());
    const stop: StopReason | undefined =
      budget.remainingMs < minAttempt(budget.policy)
        ? 'deadline_exhausted'
        : op.attemptCount >= this.#o.policy.maxAttempts
          ? 'attempts_exhausted'
          : undefined;
    if (stop === undefined) return this.#attempt(op, handler, lease);
    const last = await this.#lastReason(op);
    if (op.dispatched) return writer.unknown(op, handler, `${stop}; last attempt: ${last}`);
    return writer.fail(op, ['accepted', 'running'], 'internal', stopMessage(stop, op.attemptCount, last));
  }

  async #attempt(op: OperationRecord, handler: DurableHandler, lease: AbortSignal): Promise<Next> {
    const { store, writer, clock, logger, workerId, faults } = this.#o;
    const attemptId = newAttemptId(clock.now());
    const from = ['accepted', 'running'] as const;
    const started = await store.startAttempt(op.operationId, { workerId, attemptId, now: clock.now(), from });
    if (started === undefined) return writer.reread(op);
    faults.hit('before_dispatch');
    const t0 = clock.monotonic();
    const budget = operationBudget(this.#o.policy, started, clock.now());
    const context = {
      providerKey: providerKeyFor(op.operationId),
      timeoutMs: attemptTimeout(budget.policy, budget.elapsedMs),
      signal: lease,
    };
    let outcome: DispatchOutcome;
    try {
      outcome = await handler.dispatch(started, context);
    } catch (error) {
      // A handler classifies instead of throwing; if it throws anyway, the request may have gone out.
      logger.error('op.handler_error', { ...writer.fields(started), message: errorMessage(error) });
      outcome = { kind: 'ambiguous', reason: 'handler_error' };
    }
    const detail = describe(outcome);
    logger.info('op.attempt', {
      ...writer.fields(started),
      attempt_id: attemptId,
      attempt: started.attemptCount,
      outcome: outcome.kind,
      detail,
      duration_ms: Math.round(clock.monotonic() - t0),
    });
    const finish = (result: string) =>
      store.finishAttempt(attemptId, { endedAt: clock.now(), outcome: result, detail });
    if (lease.aborted) {
      await finish('lease_lost');
      return undefined;
    }
    switch (outcome.kind) {
      case 'created': {
        faults.hit('after_provider_reply');
        const next = await writer.succeed(started, outcome);
        await finish('succeeded');
        faults.hit('after_receipt');
        return next;
      }
      case 'rejected':
        await finish('failed');
        return writer.fail(started, SETTLE_FROM, outcome.code, `${detail}; nothing was done`);
      case 'throttled':
        await finish('retryable_failure');
        return this.#retryOrStop(started, handler, false, detail, outcome.retryAfterMs);
      case 'ambiguous':
        await finish('ambiguous');
        if (handler.mode === 'key') return this.#retryOrStop(started, handler, true, detail);
        if (handler.mode === 'reference') return this.#reconcile(started, handler, lease, true);
        return writer.unknown(started, handler, `the request may or may not have been applied (${detail})`);
    }
  }

  /** Mode reference: asks the provider whether an earlier (or the last) attempt was applied. */
  async #reconcile(
    op: OperationRecord,
    handler: DurableHandler,
    lease: AbortSignal,
    afterAttempt: boolean,
  ): Promise<Next> {
    const { writer, logger } = this.#o;
    const found = await handler.reconcile(op, {
      providerKey: providerKeyFor(op.operationId),
      timeoutMs: this.#o.policy.attemptTimeoutMs,
      signal: lease,
    });
    logger.info('op.reconciled', { ...writer.fields(op), outcome: found.kind });
    if (lease.aborted) return undefined;
    switch (found.kind) {
      case 'created':
        return writer.succeed(op, found);
      case 'unsupported':
        return writer.unknown(op, handler, 'the handler cannot reconcile an earlier attempt');
      case 'ambiguous':
        return this.#retryOrStop(op, handler, true, found.reason);
      case 'absent':
        if (op.status === 'cancel_requested') return writer.cancel(op);
        if (afterAttempt) return this.#retryOrStop(op, handler, false, 'not applied (reconciled)');
        // Established: nothing was applied. Record it; the rules then dispatch again.
        return writer.write(op, ['running'], 'running', { dispatched: false });
    }
  }

  /** After an attempt that was not applied (`dispatched` false) or may have been: backoff or stop. */
  async #retryOrStop(
    op: OperationRecord,
    handler: DurableHandler,
    dispatched: boolean,
    reason: string,
    retryAfterMs?: number,
  ): Promise<Next> {
    const { store, writer, clock, logger, workerId, random } = this.#o;
    const now = clock.now();
    const budget = operationBudget(this.#o.policy, op, now);
    const plan = planRetry(budget.policy, op.attemptCount, budget.elapsedMs, random, retryAfterMs);
    if (!plan.retry) {
      if (dispatched) return writer.unknown(op, handler, `${plan.reason}; last attempt: ${reason}`);
      return writer.fail(op, SETTLE_FROM, 'internal', stopMessage(plan.reason, op.attemptCount, reason));
    }
    const patch = { dispatched, nextAttemptAt: now + plan.delayMs, releaseLease: true };
    const scheduled = await store.transition(op.operationId, {
      workerId,
      from: ['running'],
      to: 'running',
      now,
      patch,
    });
    if (scheduled !== undefined) {
      logger.info('op.retry_scheduled', { ...writer.fields(op), delay_ms: plan.delayMs, dispatched });
      return undefined;
    }
    // Refused, most likely because a cancel arrived during the attempt: what we learned decides.
    if (!dispatched) return writer.cancel(op);
    return writer.unknown(op, handler, `cancel requested after an attempt with unknown outcome (${reason})`);
  }

  async #lastReason(op: OperationRecord): Promise<string> {
    if (op.attemptCount === 0) return 'never attempted';
    const attempts = await this.#o.store.listAttempts(op.operationId);
    let last = attempts[0];
    for (const attempt of attempts) if (last === undefined || attempt.number > last.number) last = attempt;
    return last?.detail ?? last?.outcome ?? 'interrupted';
  }
}

/** A short, body-free description of an attempt's outcome (logs, attempt rows, stored messages). */
export function describe(outcome: DispatchOutcome): string {
  switch (outcome.kind) {
    case 'created':
      return outcome.replayed === true ? 'created (replayed)' : 'created';
    case 'rejected':
      return outcome.status === 0
        ? `rejected before sending: ${outcome.reason}`
        : `rejected with HTTP ${outcome.status} (${outcome.reason})`;
    case 'throttled': {
      const what = outcome.status === 0 ? 'connection refused' : `throttled (HTTP ${outcome.status})`;
      return outcome.retryAfterMs === undefined ? what : `${what}, retry after ${outcome.retryAfterMs} ms`;
    }
    case 'ambiguous':
      return `ambiguous: ${outcome.reason}`;
  }
}
