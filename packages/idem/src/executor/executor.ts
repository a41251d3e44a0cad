import { systemClock, type Clock } from '../core/clock.js';
import { decide } from '../core/decide.js';
import { IdemError, storageCauseFields, toIdemError } from '../core/errors.js';
import { FaultPoints } from '../core/fault-points.js';
import { callFingerprint } from '../core/fingerprint.js';
import { validateFingerprintSelection, type FingerprintSelection } from '../core/fingerprint-selection.js';
import { validateIdempotencyKey } from '../core/idempotency-key.js';
import { newAttemptId, newOperationId } from '../core/ids.js';
import { unstorableArgumentError } from '../core/unstorable-argument-error.js';
import { unstorablePrincipalError } from '../core/unstorable-text.js';
import type { JsonObject } from '../core/json.js';
import type { LogFields, Logger } from '../core/logger.js';
import { operationLabel, validateOperationName, type OperationIdentity } from '../core/operation-identity.js';
import { receiptViewOf, type ReceiptView } from '../core/receipt.js';
import { isActive } from '../core/operation-state.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../core/retry-policy.js';
import type { IdemStore } from '../ports/idem-store.js';
import type { SignalOption } from '../ports/maybe-async.js';
import type { EffectContext, EffectResult } from './effect.js';
import { commitOnce, type CommitUnit } from './commit-once.js';
import { toLogger, type LoggerOption } from '../log/to-logger.js';
import { jsonLogger } from '../log/json-logger.js';
import { intentOfParts, logCall } from '../log/log-call.js';
import { startCallSpan } from '../telemetry/call-span.js';
import { outcomeOf, type CallOutcome } from './call-outcome.js';
import { NOTHING, SameKeyCalls, WAITED } from './same-key-calls.js';

export type { CallOutcome } from './call-outcome.js';

/** Receipts are kept this long unless an operation says otherwise: 24 hours. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** How long a call with the key of a running operation waits for it to finish: 2 s. */
export const DEFAULT_IN_FLIGHT_WAIT_MS = 2000;

/**
 * Decides whether `principal` may act in `workspace`. Runs before every execution AND before every
 * replay, so a principal that lost a workspace cannot read its old results back through a key.
 * `credentials` is the request's own (see CallRequest), so a check can be bounded by the credential
 * the call came with rather than by everything its principal holds.
 */
export type Authorize = (
  principal: string,
  workspace: string,
  context: { operation: string; credentials?: Readonly<Record<string, unknown>> },
) => boolean | Promise<boolean>;

interface OperationDefinition {
  readonly name: string;
  /**
   * Part of the identity. A key that a version of this operation holds never runs again under
   * another version: a call at this version with a key of an older one is answered from that
   * record when the older version is listed in `replaysVersions`, else refused `version_conflict`.
   */
  readonly version: number;
  /**
   * Older versions of this operation whose keys this version still answers: their records replay
   * (or report their state, or refuse other arguments) under their own contract; the effect never
   * runs. Default none.
   */
  readonly replaysVersions?: readonly number[];
  /** How long a final record replays, ms. Default 24 h. */
  readonly retentionMs?: number;
  /**
   * The top-level argument fields the fingerprint covers (`include`) or leaves out (`exclude`);
   * default every argument, `workspace` always. A retry differing only in an uncovered field
   * replays the first result. Changing it changes what old keys mean: bump `version`.
   */
  readonly fingerprint?: FingerprintSelection;
}

/** A mutating operation whose effect commits with its receipt (a local database write). */
export interface IdempotentOperation<App, Args extends Record<string, unknown>> extends OperationDefinition {
  /** The application's writes, made with the store's application handle inside its transaction. */
  effect(app: App, args: Args, context: EffectContext): EffectResult | Promise<EffectResult>;
  /**
   * Checks the effect's result inside the transaction, before the receipt is written: a throw (an
   * `IdemError` `internal` naming what is wrong, never the values) rolls the effect back, so nothing
   * is committed and a retry with the same key runs the effect again. Synchronous, like a SQLite
   * effect. `idempotentTool` sets it from its `resultSchema`.
   */
  checkResult?(result: EffectResult): void;
}

/** A long-running operation: accepted now, carried out by a worker (src/operations). */
export interface DurableOperation extends OperationDefinition {
  /**
   * The total deadline comes from `policy.totalMs` (default `DEFAULT_RETRY_POLICY`'s), counted from
   * acceptance.
   */
  readonly policy?: Partial<RetryPolicy>;
}

/** One call as the executor receives it: who, where, with which key and arguments (and a `signal`). */
export interface CallRequest<Args> extends SignalOption {
  /** The authenticated principal, resolved by the caller's transport; never from tool arguments. */
  readonly principal: string;
  /**
   * What the transport's authentication established beyond the principal (over MCP,
   * `authInfo.extra`, e.g. the token's workspaces), handed to `authorize` as it is.
   */
  readonly credentials?: Readonly<Record<string, unknown>>;
  /** The workspace to act in; `authorize` decides whether the principal holds it. */
  readonly workspace: string;
  /** The idempotency key as the caller sent it: checked here (1 to 255 printable ASCII characters). */
  readonly key: unknown;
  /**
   * Validated arguments without the key: what the effect receives and a durable operation stores,
   * and what the fingerprint covers (all of it, or the operation's `fingerprint` selection).
   */
  readonly args: Args;
  /**
   * Where the request came from in a distributed trace: its W3C `traceparent` and `tracestate`
   * (over MCP, the request's `_meta`), which the call's OpenTelemetry span continues. Never logged.
   */
  readonly traceContext?: Readonly<Record<string, unknown>>;
}

/** How an `Executor` is built: its store and authorization, and optionally clock, logger and waits. */
export interface ExecutorOptions<App> {
  /** Where receipts, operations and outbox messages live; its `Tx` is what effects receive. */
  store: IdemStore<App>;
  /** Named places where tests inject failures (`after_claim` ... `after_commit`). */
  faults?: FaultPoints;
  /** Checks every call's principal and workspace before it executes or replays. */
  authorize: Authorize;
  /** Time for deadlines, waits and stored instants. Default `systemClock`. */
  clock?: Clock;
  /**
   * An Idem `Logger`, a pino logger, `console` (every level on stderr) or a function that writes
   * one JSON line, as they are (see `LoggerOption`). Default: JSON lines on stderr (`jsonLogger()`),
   * never stdout, which may be an MCP stdio channel. One `idem.call` line per call; an `internal`
   * outcome's line also carries the error's name, message and stack (and `error_source`: `effect`,
   * `authorize` or `idem`), never the arguments: the details an `internal` answer points to.
   */
  logger?: LoggerOption;
  /** How long a call waits for an in-flight operation with its key. Default 2 s. */
  inFlightWaitMs?: number;
}

/**
 * Claim, effect, receipt; replay; conflict; in-flight wait. The executor owns the decisions (pure,
 * in `core`) and leaves atomicity to the Store. It never throws for an expected outcome: every call
 * ends in a `CallOutcome`, and an unexpected failure becomes `internal` after the store rolled back.
 */
export class Executor<App> {
  readonly store: IdemStore<App>;
  readonly faults: FaultPoints;
  /**
   * Where this executor's `idem.call` lines go (the `logger` option, or JSON lines on stderr).
   * Give it to read tools (`readTool({ logger: executor.logger, ... })`) so every tool call of a
   * server logs to the same place.
   */
  readonly logger: Logger;
  readonly #authorize: Authorize;
  readonly #clock: Clock;
  readonly #waitMs: number;
  readonly #sameKey = new SameKeyCalls();

  /** The clock this executor stamps its records with (the `clock` option, or the system's). */
  get clock(): Clock {
    return this.#clock;
  }

  constructor(options: ExecutorOptions<App>) {
    this.store = options.store;
    this.faults = options.faults ?? new FaultPoints();
    this.#authorize = options.authorize;
    this.#clock = options.clock ?? systemClock;
    this.logger = options.logger === undefined ? jsonLogger() : toLogger(options.logger);
    this.#waitMs = options.inFlightWaitMs ?? DEFAULT_IN_FLIGHT_WAIT_MS;
  }

  /** Checks an operation definition once; call when registering it. */
  static validate(operation: {
    name: string;
    version: number;
    retentionMs?: number;
    replaysVersions?: readonly number[];
    fingerprint?: FingerprintSelection;
  }): void {
    validateOperationName(operation.name, operation.version);
    validateFingerprintSelection(operation.fingerprint);
    for (const older of operation.replaysVersions ?? []) {
      if (!Number.isSafeInteger(older) || older < 1 || older >= operation.version) {
        throw new IdemError(
          'invalid_argument',
          `replaysVersions lists older versions of the operation (positive integers below ${operation.version}), got ${String(older)}`,
        );
      }
    }
    const retention = operation.retentionMs ?? DEFAULT_RETENTION_MS;
    if (!Number.isSafeInteger(retention) || retention <= 0) {
      throw new IdemError(
        'invalid_argument',
        'retentionMs must be a positive integer number of milliseconds',
      );
    }
  }

  /** Performs a local operation once per key; replays its result for retries. */
  run<Args extends Record<string, unknown>>(
    operation: IdempotentOperation<App, Args>,
    request: CallRequest<Args>,
  ): Promise<CallOutcome> {
    // Not `async`, and nothing read here: whatever throws does so inside #call, as a rejection.
    return this.#call(operation, request, (identity, context, requestFingerprint, watch) => ({
      effect: (app, ctx) => watch('effect', () => operation.effect(app, request.args, ctx)),
      receipt: (result) => {
        const now = this.#clock.now();
        const business = checkEffectResult(result);
        operation.checkResult?.(business);
        return {
          ...this.#newRecord(identity, context.operationId, requestFingerprint, 'local', now),
          status: 'succeeded',
          resourceId: business.resource_id,
          result: { status: 'succeeded', operation_id: context.operationId, ...business },
          expiresAt: now + (operation.retentionMs ?? DEFAULT_RETENTION_MS),
        };
      },
    }));
  }

  /**
   * Accepts a durable operation once per key and returns its handle at once; a worker executes it.
   * A retry while it runs waits up to the in-flight bound, then reports `running`.
   */
  async start<Args extends Record<string, unknown>>(
    operation: DurableOperation,
    request: CallRequest<Args>,
  ): Promise<CallOutcome> {
    const totalMs = operation.policy?.totalMs ?? DEFAULT_RETRY_POLICY.totalMs;
    return this.#call(operation, request, (identity, context, requestFingerprint, _watch, acceptedTrace) => ({
      receipt: () => {
        const now = this.#clock.now();
        return {
          ...this.#newRecord(identity, context.operationId, requestFingerprint, 'durable', now),
          status: 'accepted',
          args: request.args as JsonObject,
          deadlineAt: now + totalMs,
          ...(acceptedTrace === undefined ? {} : { acceptedTrace }),
        };
      },
    }));
  }

  /** A replay's answer: at once for a final record, else after #settle's bounded wait. */
  #answer(record: ReceiptView, attemptId: string, signal?: AbortSignal): CallOutcome | Promise<CallOutcome> {
    return isActive(record.status)
      ? this.#settle(record, attemptId, signal)
      : outcomeOf(record, true, attemptId);
  }

  /** Waits (within the bound) for an unfinished operation, then reports what it is now. */
  async #settle(record: ReceiptView, attemptId: string, signal?: AbortSignal): Promise<CallOutcome> {
    let current: ReceiptView = record;
    const started = this.#clock.monotonic();
    let pause = 25;
    while (isActive(current.status) && this.#clock.monotonic() - started < this.#waitMs) {
      await this.#clock.sleep(Math.min(pause, this.#waitMs - (this.#clock.monotonic() - started)), {
        signal,
      });
      pause = Math.min(pause * 2, 200);
      current = (await this.store.ledger.get(current.operationId, { signal })) ?? current;
    }
    return outcomeOf(current, true, attemptId);
  }

  async #call<Args extends Record<string, unknown>>(
    operation: OperationDefinition,
    request: CallRequest<Args>,
    build: (
      identity: OperationIdentity,
      context: Omit<EffectContext, 'enqueue'>,
      requestFingerprint: string,
      watch: Watch,
      acceptedTrace: string | undefined,
    ) => Pick<CommitUnit<App>, 'effect' | 'receipt'>,
  ): Promise<CallOutcome> {
    const attemptId = newAttemptId(this.#clock.now());
    const started = this.#clock.monotonic();
    // The call's span, started now when a tracer is registered (else undefined, at no cost): a
    // durable operation stores its traceparent, which a worker in any process links to.
    const span = startCallSpan(operation.name, request.traceContext);
    let operationId: string | undefined;
    // What the application's own code (effect, authorize) threw during this call, if anything.
    let failure: UserCodeFailure | undefined;
    const watch: Watch = (source, run) =>
      watched(run, (error) => {
        failure = { source, error };
      });
    const finish = (outcome: CallOutcome): CallOutcome => {
      logCall(
        this.logger,
        {
          attemptId,
          operationId: outcome.ok ? outcome.operationId : (outcome.error.operationId ?? operationId),
          // The same on every retry of this action, whatever its earlier attempts ended in.
          intent: () => intentOfParts(request.principal, request.workspace, operation.name, request.key),
          tool: operationLabel({ operation: operation.name, version: operation.version }),
          principal: request.principal,
          workspace: request.workspace,
          outcome: outcome.ok
            ? callOutcomeLabel(outcome.replayed, outcome.result.status)
            : outcome.error.code,
          errorCode: outcome.ok ? undefined : outcome.error.code,
          durationMs: this.#clock.monotonic() - started,
          traceContext: request.traceContext,
          span,
        },
        // An `unavailable` storage: the driver code and the file or server, never a body.
        outcome.ok
          ? {}
          : {
              ...storageCauseFields(outcome.error),
              ...(outcome.error.code === 'internal' ? errorFields(failure, outcome.error) : {}),
            },
      );
      return outcome;
    };

    // Set once this call leads its identity's calls in this executor (SameKeyCalls).
    let endLead: ((committed?: ReceiptView) => void) | undefined;
    try {
      const key = validateIdempotencyKey(request.key);
      // Before any storage access, the same answer on every engine (see unstorableText); the
      // arguments' own check comes with their fingerprint, in the same pass.
      const unstorable =
        unstorablePrincipalError(request.principal) ??
        unstorableArgumentError(request.workspace, 'workspace');
      if (unstorable !== undefined) throw unstorable;
      const requestFingerprint = callFingerprint(request.args, operation.fingerprint);
      const verdict = watch('authorize', () =>
        this.#authorize(request.principal, request.workspace, {
          operation: operation.name,
          ...(request.credentials === undefined ? {} : { credentials: request.credentials }),
        }),
      );
      // A synchronous answer is used as it is (no turn of the microtask queue for it).
      const allowed = verdict instanceof Promise ? await verdict : verdict;
      if (!allowed) {
        throw new IdemError(
          'forbidden',
          `principal may not act in workspace ${JSON.stringify(request.workspace)}`,
        );
      }
      const identity: OperationIdentity = {
        principal: request.principal,
        workspace: request.workspace,
        operation: operation.name,
        version: operation.version,
        key,
      };

      // Another call of this identity under way here (a retry storm): wait for it, and when it
      // executed, decide on the record it committed instead of reading and writing again; when it
      // committed nothing, follow the next one or lead; when the wait ran out, go alone.
      for (;;) {
        const led = this.#sameKey.follow(identity, {
          clock: this.#clock,
          waitMs: this.#waitMs,
          signal: request.signal,
        });
        const followed = led === undefined ? WAITED : await led;
        if (followed === WAITED) break;
        if (followed === NOTHING) continue;
        const joined = decide(
          { kind: 'receipt', receipt: ownCopy(followed) },
          requestFingerprint,
          this.#clock.now(),
          operation,
        );
        if (joined.kind === 'replay')
          return finish(await this.#answer(joined.receipt, attemptId, request.signal));
        if (joined.kind === 'reject') throw joined.error;
        break;
      }
      endLead = this.#sameKey.lead(identity);

      // Lock-free read first: a replay or a rejection needs no write lock.
      const found = await this.store.receipts.lookup(identity, request);
      const early = decide(found, requestFingerprint, this.#clock.now(), operation);
      if (early.kind === 'replay') {
        endLead();
        // A final record answers at once: no turn of the microtask queue for it.
        const answer = this.#answer(early.receipt, attemptId, request.signal);
        return finish(answer instanceof Promise ? await answer : answer);
      }
      if (early.kind === 'reject') throw early.error;

      operationId = newOperationId(this.#clock.now());
      const context = { operationId, attemptId, identity };
      const outcome = await commitOnce(
        this.store.receipts,
        {
          identity,
          context,
          absent: found === undefined,
          decide: (existing) => decide(existing, requestFingerprint, this.#clock.now(), operation),
          ...build(identity, context, requestFingerprint, watch, span?.traceparent),
        },
        this.faults,
        request,
      );
      if (outcome.kind === 'executed') {
        endLead(outcome.receipt);
        return finish(outcomeOf(outcome.receipt, false, attemptId));
      }
      endLead();
      operationId = undefined;
      if (outcome.decision.kind === 'replay') {
        return finish(await this.#answer(outcome.decision.receipt, attemptId, request.signal));
      }
      throw outcome.decision.error;
    } catch (error) {
      endLead?.();
      const idemError = toIdemError(
        error,
        'the operation failed and was rolled back; nothing was committed',
        request.signal,
      );
      if (failure !== undefined && idemError.code === 'internal') {
        // The application's own code failed: say so, and where its details are, never what they are.
        const where = operationId === undefined ? `attempt ${attemptId}` : `operation ${operationId}`;
        const visible = new IdemError(
          'internal',
          `the tool's ${failure.source} code failed; nothing was committed. The server log has the details under ${where}.`,
          { ...(operationId === undefined ? {} : { operationId }), cause: failure.error },
        );
        return finish({ ok: false, error: visible, attemptId });
      }
      return finish({ ok: false, error: idemError, attemptId });
    }
  }

  #newRecord(
    identity: OperationIdentity,
    operationId: string,
    requestFingerprint: string,
    kind: 'local' | 'durable',
    now: number,
  ) {
    return {
      operationId,
      identity,
      fingerprint: requestFingerprint,
      kind,
      createdAt: now,
      updatedAt: now,
      attemptCount: kind === 'local' ? 1 : 0,
      dispatched: false,
    } as const;
  }
}

type Watch = <T>(source: UserCodeFailure['source'], run: () => T) => T;

interface UserCodeFailure {
  readonly source: 'effect' | 'authorize';
  readonly error: unknown;
}

/**
 * Runs the application's code and reports what it throws (synchronously or as a rejected promise),
 * rethrowing it unchanged: the store still translates driver errors and rolls back, and a
 * synchronous effect stays synchronous (SQLite runs it inside its transaction).
 */
function watched<T>(run: () => T, report: (error: unknown) => void): T {
  try {
    const value = run();
    if (value instanceof Promise) {
      return value.catch((error: unknown) => {
        report(error);
        throw error;
      }) as T;
    }
    return value;
  } catch (error) {
    report(error);
    throw error;
  }
}

/** The log fields of an `internal` outcome: what failed, where, and its stack; never arguments. */
function errorFields(failure: UserCodeFailure | undefined, error: IdemError): LogFields {
  const root = failure?.error ?? error.cause ?? error;
  const described = root instanceof Error ? root : new Error(String(root));
  return {
    error_source: failure?.source ?? 'idem',
    error_name: described.name,
    error_message: described.message,
    error_stack: described.stack,
  };
}

/** The JSON text of a leader's result, made once for all its followers. */
const resultTexts = new WeakMap<ReceiptView, string>();

/** A follower's own view of the leader's record: its result is a copy, as a lookup would parse anew. */
function ownCopy(record: ReceiptView): ReceiptView {
  const view = receiptViewOf(record);
  if (view.result === undefined) return view;
  let text = resultTexts.get(record);
  if (text === undefined) {
    text = JSON.stringify(view.result);
    resultTexts.set(record, text);
  }
  return { ...view, result: JSON.parse(text) as JsonObject };
}

function checkEffectResult(result: EffectResult | undefined): EffectResult {
  if (typeof result !== 'object' || result === null || typeof result.resource_id !== 'string') {
    throw new IdemError('internal', 'the effect must return an object with a string resource_id');
  }
  for (const reserved of ['status', 'operation_id', 'replayed']) {
    if (reserved in result)
      throw new IdemError('internal', `the effect must not return the reserved field ${reserved}`);
  }
  return result;
}

/** `executed` for a first local execution, `replayed` for a replay, else the status (`accepted`). */
function callOutcomeLabel(replayed: boolean, status: unknown): string {
  if (replayed) return 'replayed';
  return status === 'succeeded' ? 'executed' : String(status);
}
