import type { Clock } from '../core/clock.js';
import type { FaultPoints } from '../core/fault-points.js';
import { newAttemptId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { OperationRecord } from '../core/operation-record.js';
import {
  attemptTimeout,
  minAttempt,
  planRetry,
  retryPolicy,
  type RetryPolicy,
} from '../core/retry-policy.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { startAttempt, transition } from './ledger-transitions.js';
import { recordAttempt } from '../telemetry/record-attempt.js';
import { attemptHistory, NOT_SENT, type AttemptHistory } from './attempt-history.js';
import { CancelWatch } from './cancel-watch.js';
import { fittedApplied, fittedEvidence } from './declared-fields.js';
import {
  providerKeyFor,
  type Applied,
  type DispatchOutcome,
  type DurableHandler,
  type RecoveryMode,
} from './durable-handler.js';
import { operationBudget, stopMessage, type StopReason } from './operation-budget.js';
import { errorMessage } from './polling-loop.js';
import { SETTLE_FROM, type Next, type OperationWriter } from './operation-writer.js';

export interface OperationProcessorOptions {
  readonly ledger: OperationsLedger;
  readonly writer: OperationWriter;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly workerId: string;
  readonly policy: RetryPolicy;
  readonly faults: FaultPoints;
  readonly random: () => number;
  /** How often a dispatch of a handler with `watchesCancel` re-reads its operation. Default 200. */
  readonly cancelPollMs?: number;
  /**
   * How late the worker may pick up an operation that is due, ms (its poll interval): the last
   * retry after a refused connection is planned this much earlier. Default 0.
   */
  readonly pickupMs?: number;
}

/**
 * The rules by which a worker carries one leased operation. `step` applies this table once and
 * answers the record to apply it to again (after a refused write, a reconciliation, …) or
 * undefined. "dispatched" means an attempt may have reached the provider and its outcome is not
 * established; it is cleared only by what the provider establishes (a success, a reference lookup
 * that finds nothing once no abandoned request can land), never by a later refusal, throttle,
 * cancel or deadline. mode is the handler's recovery mode.
 *
 * | record                               | mode      | action                                                   |
 * | ------------------------------------ | --------- | -------------------------------------------------------- |
 * | cancel_requested, not dispatched     | any       | `cancelled` (nothing was or will be done)                |
 * | dispatched (cancel requested or not) | reference | reconcile: found -> `succeeded`; absent before the       |
 * |                                      |           | landing window ends -> look again then; absent after ->  |
 * |                                      |           | `cancelled` if cancel requested, else dispatch again;    |
 * |                                      |           | lookup failed -> backoff or `outcome_unknown`            |
 * | dispatched (cancel requested or not) | key       | re-send with the SAME provider key (replays or creates), |
 * |                                      |           | only within `providerKeyRetentionMs` (if declared) of    |
 * |                                      |           | the first attempt that may have reached the provider,    |
 * |                                      |           | its timeout narrowed to fit; past it `outcome_unknown`   |
 * | dispatched                           | none      | `outcome_unknown`, error.nextAction says what to check   |
 * | deadline passed / attempts used up   | any       | dispatched: `outcome_unknown`; else `failed` (internal,  |
 * | (reference reconciles first)         |           | "deadline exhausted after N attempts: <last reason>")    |
 * | otherwise: startAttempt (commits running + dispatched + attempt row), `before_dispatch`, dispatch:  |
 * | - created                            | any       | `after_provider_reply`, `succeeded` (wins over a cancel  |
 * |                                      |           | that arrived meanwhile), finishAttempt, `after_receipt`  |
 * | - rejected (403, 422)                | any       | `failed` forbidden / invalid_argument, never retried;    |
 * |                                      |           | after an earlier dispatched attempt: `outcome_unknown`   |
 * | - throttled (429, 503, refused)      | any       | backoff (Retry-After when it fits the budget), keeping   |
 * |                                      |           | an earlier attempt's `dispatched`; else stop as above;   |
 * |                                      |           | cancel arrived meanwhile: the rules again (cancelled     |
 * |                                      |           | only if nothing was dispatched before). A refused        |
 * |                                      |           | connection (`unsent`) is recorded `not_sent` and retried |
 * |                                      |           | baseDelayMs to maxRefusedDelayMs apart up to a last try  |
 * |                                      |           | planned minAttempt + pickupMs before the deadline        |
 * | - ambiguous (timeout, reset, 5xx)    | key       | still dispatched; backoff (same key next time) or        |
 * |                                      |           | `outcome_unknown`                                        |
 * |                                      | reference | reconcile at once (as above)                             |
 * |                                      | none      | `outcome_unknown`                                        |
 *
 * Limits: `maxAttempts` counts the attempts that may have reached the provider (every
 * `startAttempt`, a crashed one included, but those recorded `not_sent`); the budget is
 * `operationBudget`. An operation picked up before its deadline is attempted even with less than
 * `minAttempt` left (a worker picked a planned retry up late): its timeout is `minAttempt` at
 * least, so it may end that much past the deadline; after the deadline none is.
 * A reconciliation uses the full attempt timeout even past the deadline: it only reads, and it is
 * the one way to learn the truth. The landing window: a request abandoned at its start + the attempt
 * timeout may still be applied for `handler.landingMs` (default: the attempt timeout) afterwards.
 *
 * Handlers that run a local effect to its end (commands, src/commands) add three things, each
 * optional and inert for other handlers: `modeFor` (the mode per operation: a rerunnable command is
 * `key`, any other `none`, so a crashed run is never started again), `policy` (their own budget
 * instead of the worker's), and `watchesCancel` (a CancelWatch aborts `cancelSignal` while the
 * dispatch runs). Their outcomes `failed` (ran, ended without success: final, the evidence kept as
 * the result) and `cancelled` (stopped on request before it ended by itself) settle at once.
 */
const FROM_ACTIVE = ['accepted', 'running'] as const;
const FROM_WITH_CANCEL = ['accepted', 'running', 'cancel_requested'] as const;

export class OperationProcessor {
  readonly #o: OperationProcessorOptions;

  constructor(options: OperationProcessorOptions) {
    this.#o = options;
  }

  async step(op: OperationRecord, handler: DurableHandler, lease: AbortSignal): Promise<Next> {
    const { writer } = this.#o;
    const mode = modeOf(handler, op);
    if (op.dispatched) {
      if (mode === 'reference') return this.#reconcile(op, handler, lease, false);
      if (mode === 'none')
        return writer.unknown(op, handler, 'an attempt was interrupted before its outcome was known');
      // Mode key, also after a cancel request: only a resend with the same key can tell.
    } else if (op.status === 'cancel_requested') {
      return writer.cancel(op);
    }
    const budget = operationBudget(this.#policy(handler), op, this.#o.clock.now());
    // The cap counts only attempts that may have reached the provider: a refused connection sent
    // nothing, and its retries are bounded by the deadline (the rows tell, read only near the cap).
    const history =
      op.attemptCount >= budget.policy.maxAttempts || keyWindowOf(handler, op) !== undefined
        ? await this.#history(op)
        : undefined;
    // A try that is due is made as long as the deadline has not passed, however late the pickup:
    // retries are planned with minAttempt left, and the attempt gets at least that (#attempt).
    const stop: StopReason | undefined =
      budget.remainingMs <= 0
        ? 'deadline_exhausted'
        : (history?.reached ?? op.attemptCount) >= budget.policy.maxAttempts
          ? 'attempts_exhausted'
          : undefined;
    if (stop !== undefined) {
      const last = await this.#lastReason(op);
      if (op.dispatched) return writer.unknown(op, handler, `${stop}; last attempt: ${last}`);
      const reached = history?.reached ?? (await this.#history(op)).reached;
      return writer.fail(
        op,
        ['accepted', 'running'],
        'internal',
        stopMessage(stop, op.attemptCount, last, reached),
      );
    }
    // A keyed resend is safe only while the provider still knows the key: none is sent later.
    const windowMs = history === undefined ? undefined : this.#keyWindowLeft(op, handler, history);
    if (windowMs !== undefined && windowMs < minAttempt(budget.policy))
      return this.#keyWindowPassed(op, handler, await this.#lastReason(op));
    return this.#attempt(op, handler, lease, windowMs);
  }

  /** One dispatch; `windowMs` (a keyed resend) narrows its timeout to the provider's key retention. */
  async #attempt(
    op: OperationRecord,
    handler: DurableHandler,
    lease: AbortSignal,
    windowMs?: number,
  ): Promise<Next> {
    const { ledger, writer, clock, logger, workerId, faults } = this.#o;
    const attemptId = newAttemptId(clock.now());
    // An earlier attempt may have been applied: this one only learns the truth, and no refusal,
    // throttle or deadline that follows can establish that nothing was done.
    const earlier = op.dispatched;
    // A first dispatch never starts after a cancel request; a keyed resend may (it cannot add a
    // second effect, and it is the one way to learn whether the first one happened).
    const from = earlier ? FROM_WITH_CANCEL : FROM_ACTIVE;
    const started = await startAttempt(ledger, op.operationId, {
      workerId,
      attemptId,
      now: clock.now(),
      from,
    });
    if (started === undefined) return writer.reread(op);
    faults.hit('before_dispatch');
    const t0 = clock.monotonic();
    const budget = operationBudget(this.#policy(handler), started, clock.now());
    // Only for handlers that asked: a read of the operation every cancelPollMs while it runs.
    const watch =
      handler.watchesCancel === true
        ? new CancelWatch({
            ledger,
            clock,
            logger,
            operationId: op.operationId,
            intervalMs: this.#o.cancelPollMs ?? 200,
          })
        : undefined;
    const context = {
      providerKey: providerKeyFor(op.operationId),
      timeoutMs: Math.min(
        Math.max(attemptTimeout(budget.policy, budget.elapsedMs), minAttempt(budget.policy)),
        windowMs ?? Infinity,
      ),
      signal: lease,
      ...(watch === undefined ? {} : { cancelSignal: watch.signal }),
    };
    let outcome: DispatchOutcome;
    watch?.start();
    try {
      outcome = await handler.dispatch(started, context);
    } catch (error) {
      // A handler classifies instead of throwing; if it throws anyway, the request may have gone out.
      logger.error('op.handler_error', { ...writer.fields(started), message: errorMessage(error) });
      outcome = { kind: 'ambiguous', reason: 'handler_error' };
    } finally {
      await watch?.stop();
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
    recordAttempt({
      operation: started.identity.operation,
      version: started.identity.version,
      operationId: started.operationId,
      attemptId,
      attempt: started.attemptCount,
      outcome: outcome.kind,
      durationMs: clock.monotonic() - t0,
      acceptedTrace: started.acceptedTrace,
    });
    const finish = (result: string) =>
      ledger.finishAttempt(attemptId, { endedAt: clock.now(), outcome: result, detail });
    if (lease.aborted) {
      await finish('lease_lost');
      return undefined;
    }
    switch (outcome.kind) {
      case 'created': {
        faults.hit('after_provider_reply');
        const next = await writer.succeed(started, this.#fitted(started, handler, outcome));
        await finish('succeeded');
        faults.hit('after_receipt');
        return next;
      }
      case 'rejected':
        await finish('failed');
        if (earlier)
          return writer.unknown(started, handler, `an earlier attempt may have been applied; now ${detail}`);
        return writer.fail(started, SETTLE_FROM, outcome.code, `${detail}; nothing was done`);
      case 'throttled': {
        // A refused connection sent nothing: recorded so, it does not count against the cap.
        const unsent = outcome.unsent === true;
        await finish(unsent ? NOT_SENT : 'retryable_failure');
        return this.#retryOrStop(started, handler, earlier, detail, {
          unsent,
          ...(outcome.retryAfterMs === undefined ? {} : { retryAfterMs: outcome.retryAfterMs }),
        });
      }
      case 'ambiguous': {
        await finish('ambiguous');
        const mode = modeOf(handler, started);
        if (mode === 'key') return this.#retryOrStop(started, handler, true, detail);
        if (mode === 'reference') return this.#reconcile(started, handler, lease, true);
        return writer.unknown(started, handler, `the request may or may not have been applied (${detail})`);
      }
      // The effect ran to an established end: final at once, with its evidence as the result.
      case 'failed':
        await finish('failed');
        return writer.fail(started, SETTLE_FROM, outcome.code, outcome.message, outcome.evidence);
      case 'cancelled':
        await finish('cancelled');
        return writer.cancel(
          started,
          fittedEvidence(outcome.evidence, handler.resultSchema, (fields) =>
            logger.error('op.result_mismatch', { ...writer.fields(started), ...fields }),
          ),
        );
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
      timeoutMs: this.#policy(handler).attemptTimeoutMs,
      signal: lease,
    });
    logger.info('op.reconciled', { ...writer.fields(op), outcome: found.kind });
    if (lease.aborted) return undefined;
    switch (found.kind) {
      case 'created':
        return writer.succeed(op, this.#fitted(op, handler, found));
      case 'unsupported':
        return writer.unknown(op, handler, 'the handler cannot reconcile an earlier attempt');
      case 'ambiguous':
        return this.#retryOrStop(op, handler, true, found.reason);
      case 'absent': {
        // Absent proves nothing while an abandoned request could still land: look again after.
        const wait = await this.#landingWait(op, handler);
        if (wait > 0) return this.#schedule(op, true, wait, 'absent, but an attempt may still land');
        if (op.status === 'cancel_requested') return writer.cancel(op);
        if (afterAttempt) return this.#retryOrStop(op, handler, false, 'not applied (reconciled)');
        // Established: nothing was applied. Record it; the rules then dispatch again.
        return writer.write(op, ['running'], 'running', { dispatched: false });
      }
    }
  }

  /**
   * After an attempt that was not applied (`dispatched` false) or may have been (or followed one that
   * may have been): backoff, or stop with `failed` (nothing applied) or `outcome_unknown`. Only
   * attempts that may have reached the provider count against the cap; after one that provably did
   * not (`unsent`), retries follow `RetryCount.refused`, the last one planned `pickupMs` early. A keyed
   * resend is planned only within the provider's key retention: a backoff is shortened to fit it, a
   * `Retry-After` beyond it stops.
   */
  async #retryOrStop(
    op: OperationRecord,
    handler: DurableHandler,
    dispatched: boolean,
    reason: string,
    options: { readonly retryAfterMs?: number; readonly unsent?: boolean } = {},
  ): Promise<Next> {
    const { writer, clock, random } = this.#o;
    const budget = operationBudget(this.#policy(handler), op, clock.now());
    const history = await this.#history(op);
    const plan = planRetry(budget.policy, op.attemptCount, budget.elapsedMs, random, options.retryAfterMs, {
      countedAttempts: history.reached,
      ...(options.unsent === true ? { refused: true, pickupMs: this.#o.pickupMs ?? 0 } : {}),
    });
    if (!plan.retry) {
      if (dispatched) return writer.unknown(op, handler, `${plan.reason}; last attempt: ${reason}`);
      const message = stopMessage(plan.reason, op.attemptCount, reason, history.reached);
      return writer.fail(op, SETTLE_FROM, 'internal', message);
    }
    let delayMs = plan.delayMs;
    const windowMs = dispatched ? this.#keyWindowLeft(op, handler, history) : undefined;
    if (windowMs !== undefined) {
      // The latest wait that still leaves the resend a worthwhile attempt inside the window.
      const room = windowMs - minAttempt(budget.policy);
      if (delayMs > room) {
        if (options.retryAfterMs !== undefined || room < 0) return this.#keyWindowPassed(op, handler, reason);
        delayMs = room;
      }
    }
    return this.#schedule(op, dispatched, delayMs, reason);
  }

  /**
   * Mode `key` with a handler that declares `providerKeyRetentionMs`: how long from now a resend
   * may still reach the provider while it keeps the key, counted from the start of the first attempt
   * that may have reached it (the key was stored no earlier). Undefined: no such bound.
   */
  #keyWindowLeft(op: OperationRecord, handler: DurableHandler, history: AttemptHistory): number | undefined {
    const retentionMs = keyWindowOf(handler, op);
    if (retentionMs === undefined || history.firstReachedAt === undefined) return undefined;
    return history.firstReachedAt + retentionMs - this.#o.clock.now();
  }

  /** `outcome_unknown`: a resend could reach the provider only after it may have forgotten the key. */
  #keyWindowPassed(op: OperationRecord, handler: DurableHandler, reason: string): Promise<Next> {
    const retentionMs = keyWindowOf(handler, op) ?? 0;
    return this.#o.writer.unknown(
      op,
      handler,
      `the provider keeps an idempotency key for ${retentionMs} ms, and a resend could no longer reach ` +
        `it within that time of the first attempt, so none was sent: the provider may have forgotten ` +
        `the key and would apply the request again; last attempt: ${reason}`,
      { keyRetentionPassedMs: retentionMs },
    );
  }

  /** Releases the lease until `delayMs` from now, recording whether an attempt may have been applied. */
  async #schedule(op: OperationRecord, dispatched: boolean, delayMs: number, reason: string): Promise<Next> {
    const { ledger, writer, clock, logger, workerId } = this.#o;
    const now = clock.now();
    const patch = { dispatched, nextAttemptAt: now + delayMs, releaseLease: true };
    const scheduled = await transition(ledger, op.operationId, {
      workerId,
      from: [op.status],
      to: op.status,
      now,
      patch,
    });
    if (scheduled !== undefined) {
      logger.info('op.retry_scheduled', { ...writer.fields(op), delay_ms: delayMs, dispatched, reason });
      return undefined;
    }
    // Refused, most likely because a cancel arrived meanwhile. Nothing applied: cancelled. Maybe
    // applied: the fresh record goes through the rules (a keyed resend or a reconciliation).
    if (!dispatched) return writer.cancel(op);
    return writer.reread(op);
  }

  /**
   * How long until no abandoned attempt can still be applied by the provider: an attempt's request
   * may be processed until its start + the attempt timeout + the handler's `landingMs`. 0 when past.
   */
  async #landingWait(op: OperationRecord, handler: DurableHandler): Promise<number> {
    if (op.attemptCount === 0) return 0;
    // Only a request that may have reached the provider can land (a refused one sent nothing).
    const { lastReachedAt } = await this.#history(op);
    if (lastReachedAt === undefined) return 0;
    // The attempt timeout the handler's attempts ran with: its own policy's, if it has one.
    const { attemptTimeoutMs } = this.#policy(handler);
    const landing = handler.landingMs ?? attemptTimeoutMs;
    // The client gives a request up by its start + the attempt timeout at the latest (an attempt
    // closed later, e.g. an interrupted one repaired at takeover, was not sending any longer).
    const latest = lastReachedAt + attemptTimeoutMs + landing;
    return Math.max(0, latest - this.#o.clock.now());
  }

  /** What the operation's attempt rows say about the requests that may have reached the provider. */
  async #history(op: OperationRecord): Promise<AttemptHistory> {
    if (op.attemptCount === 0) return { reached: 0, firstReachedAt: undefined, lastReachedAt: undefined };
    return attemptHistory(await this.#o.ledger.attempts(op.operationId));
  }

  /** A success with only the fields that fit the handler's `resultSchema` (see `fittedApplied`). */
  #fitted(op: OperationRecord, handler: DurableHandler, applied: Applied): Applied {
    return fittedApplied(applied, handler.resultSchema, (fields) =>
      this.#o.logger.error('op.result_mismatch', { ...this.#o.writer.fields(op), ...fields }),
    );
  }

  /** The handler's own policy (over `DEFAULT_RETRY_POLICY`), if it has one; else the worker's. */
  #policy(handler: DurableHandler): RetryPolicy {
    return handler.policy === undefined ? this.#o.policy : retryPolicy(handler.policy);
  }

  async #lastReason(op: OperationRecord): Promise<string> {
    if (op.attemptCount === 0) return 'never attempted';
    const attempts = await this.#o.ledger.attempts(op.operationId);
    let last = attempts[0];
    for (const attempt of attempts) if (last === undefined || attempt.number > last.number) last = attempt;
    return last?.detail ?? last?.outcome ?? 'interrupted';
  }
}

/** The recovery mode of this operation: the handler's `modeFor`, or its one `mode`. */
function modeOf(handler: DurableHandler, op: OperationRecord): RecoveryMode {
  return handler.modeFor?.(op) ?? handler.mode;
}

/** The provider's key retention when it bounds this operation's resends (mode `key`, dispatched). */
function keyWindowOf(handler: DurableHandler, op: OperationRecord): number | undefined {
  return op.dispatched && modeOf(handler, op) === 'key' ? handler.providerKeyRetentionMs : undefined;
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
    case 'failed':
      return `failed: ${outcome.reason}`;
    case 'cancelled':
      return 'cancelled on request';
  }
}
