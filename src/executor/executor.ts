import { systemClock, type Clock } from '../core/clock.js';
import { decide } from '../core/decide.js';
import { IdemError, toIdemError } from '../core/errors.js';
import type { FaultPoints } from '../core/fault-points.js';
import { fingerprint } from '../core/fingerprint.js';
import { validateIdempotencyKey } from '../core/idempotency-key.js';
import { newAttemptId, newOperationId } from '../core/ids.js';
import type { JsonObject } from '../core/json.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { operationLabel, validateOperationName, type OperationIdentity } from '../core/operation-identity.js';
import type { Receipt } from '../core/receipt.js';
import type { EffectContext, EffectResult, SignalOption, Store } from '../store/store.js';

/** Receipts are kept this long unless an operation says otherwise: 24 hours. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Decides whether `principal` may act in `workspace`. Runs before every execution AND before every
 * replay, so a principal that lost a workspace cannot read its old results back through a key.
 */
export type Authorize = (
  principal: string,
  workspace: string,
  context: { operation: string },
) => boolean | Promise<boolean>;

/** A mutating operation made safe to retry. */
export interface IdempotentOperation<App, Args extends Record<string, unknown>> {
  readonly name: string;
  /** Part of the identity: a retry of version 1 never replays or runs as version 2. */
  readonly version: number;
  /** How long a receipt replays, ms. Default 24 h. */
  readonly retentionMs?: number;
  /** The application's writes, made with the store's application handle inside its transaction. */
  effect(app: App, args: Args, context: EffectContext): EffectResult | Promise<EffectResult>;
}

export interface CallRequest<Args> extends SignalOption {
  /** The authenticated principal, resolved by the caller's transport; never from tool arguments. */
  readonly principal: string;
  readonly workspace: string;
  readonly key: unknown;
  /** Validated arguments without the key: exactly what the fingerprint covers. */
  readonly args: Args;
}

export type CallOutcome =
  | {
      readonly ok: true;
      /** The stored result, unchanged. */
      readonly result: JsonObject;
      readonly replayed: boolean;
      readonly operationId: string;
      readonly attemptId: string;
    }
  | { readonly ok: false; readonly error: IdemError; readonly attemptId: string };

export interface ExecutorOptions<App> {
  store: Store<App>;
  authorize: Authorize;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Claim, effect, receipt; replay; conflict. The executor owns the decisions (pure, in `core`) and
 * leaves atomicity to the Store. It never throws for an expected outcome: every call ends in a
 * `CallOutcome`, and an unexpected failure becomes `internal` after the store rolled back.
 */
export class Executor<App> {
  readonly store: Store<App>;
  readonly #authorize: Authorize;
  readonly #clock: Clock;
  readonly #logger: Logger;

  constructor(options: ExecutorOptions<App>) {
    this.store = options.store;
    this.#authorize = options.authorize;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  get faults(): FaultPoints {
    return this.store.faults;
  }

  /** Checks an operation definition once; call when registering it. */
  static validate(operation: { name: string; version: number; retentionMs?: number }): void {
    validateOperationName(operation.name, operation.version);
    const retention = operation.retentionMs ?? DEFAULT_RETENTION_MS;
    if (!Number.isSafeInteger(retention) || retention <= 0) {
      throw new IdemError(
        'invalid_argument',
        'retentionMs must be a positive integer number of milliseconds',
      );
    }
  }

  async run<Args extends Record<string, unknown>>(
    operation: IdempotentOperation<App, Args>,
    request: CallRequest<Args>,
  ): Promise<CallOutcome> {
    const attemptId = newAttemptId();
    const started = this.#clock.monotonic();
    let operationId: string | undefined;
    const finish = (outcome: CallOutcome): CallOutcome => {
      const fields = {
        attempt_id: attemptId,
        operation_id: outcome.ok ? outcome.operationId : operationId,
        tool: operationLabel({ operation: operation.name, version: operation.version }),
        principal: request.principal,
        workspace: request.workspace,
        outcome: outcome.ok ? (outcome.replayed ? 'replayed' : 'executed') : outcome.error.code,
        duration_ms: Math.round((this.#clock.monotonic() - started) * 1000) / 1000,
      };
      if (!outcome.ok && outcome.error.code === 'internal') this.#logger.error('idem.call', fields);
      else this.#logger.info('idem.call', fields);
      return outcome;
    };

    try {
      const key = validateIdempotencyKey(request.key);
      const requestFingerprint = fingerprint(request.args);
      const allowed = await this.#authorize(request.principal, request.workspace, {
        operation: operation.name,
      });
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

      // Lock-free read first: a replay or a rejection needs no write lock.
      const early = decide(await this.store.lookup(identity, request), requestFingerprint, this.#clock.now());
      if (early.kind === 'replay') return finish(replay(early.receipt, attemptId));
      if (early.kind === 'reject') throw early.error;

      operationId = newOperationId();
      const context: EffectContext = { operationId, attemptId, identity };
      const retentionMs = operation.retentionMs ?? DEFAULT_RETENTION_MS;
      const outcome = await this.store.commit(
        {
          identity,
          context,
          decide: (existing) => decide(existing, requestFingerprint, this.#clock.now()),
          effect: (app, ctx) => operation.effect(app, request.args, ctx),
          receipt: (result) => this.#receipt(identity, context, requestFingerprint, result, retentionMs),
        },
        request,
      );
      if (outcome.kind === 'executed') {
        return finish({ ok: true, result: outcome.receipt.result, replayed: false, operationId, attemptId });
      }
      operationId = undefined;
      if (outcome.decision.kind === 'replay') return finish(replay(outcome.decision.receipt, attemptId));
      throw outcome.decision.error;
    } catch (error) {
      const idemError = toIdemError(error, 'the operation failed and was rolled back; nothing was committed');
      return finish({ ok: false, error: idemError, attemptId });
    }
  }

  #receipt(
    identity: OperationIdentity,
    context: EffectContext,
    requestFingerprint: string,
    result: EffectResult,
    retentionMs: number,
  ): Receipt {
    if (typeof result !== 'object' || result === null || typeof result.resource_id !== 'string') {
      throw new IdemError('internal', 'the effect must return an object with a string resource_id');
    }
    for (const reserved of ['status', 'operation_id', 'replayed']) {
      if (reserved in result)
        throw new IdemError('internal', `the effect must not return the reserved field ${reserved}`);
    }
    const createdAt = this.#clock.now();
    return {
      operationId: context.operationId,
      identity,
      fingerprint: requestFingerprint,
      status: 'succeeded',
      resourceId: result.resource_id,
      result: { status: 'succeeded', operation_id: context.operationId, ...result },
      createdAt,
      expiresAt: createdAt + retentionMs,
    };
  }
}

function replay(receipt: Receipt, attemptId: string): CallOutcome {
  return { ok: true, result: receipt.result, replayed: true, operationId: receipt.operationId, attemptId };
}
