import type { z } from 'zod';
import { systemClock, type Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import { retryPolicy, type RetryPolicy } from '../core/retry-policy.js';
import type {
  DispatchOutcome,
  DurableHandler,
  HandlerCallContext,
  ReconcileOutcome,
  UnknownOutcomeContext,
} from './durable-handler.js';
import {
  describeEffect,
  dispatchJsonPost,
  RESOLVE_ADVICE,
  windowText,
  type HttpHandlerOptions,
  type HttpSuccess,
} from './http-handler-options.js';

/** How `unkeyedHandler` builds the body it sends to an HTTP API that takes no key, and reads its result. */
export interface UnkeyedHandlerOptions extends HttpHandlerOptions {
  /**
   * The JSON request body, from the operation's arguments (the tool's validated input); sent as
   * is, with no key. Pure. A throw means arguments the provider cannot be sent: the operation
   * fails `invalid_argument`, nothing is sent.
   */
  readonly body: (args: JsonObject) => JsonObject;
  /**
   * The success read from a 2xx JSON body (and the arguments). Undefined (or a throw) when the
   * body does not say what was made: the answer then counts as ambiguous, and the operation ends
   * `outcome_unknown` (nothing can settle it but an operator). Pure.
   */
  readonly result: (response: JsonObject, args: JsonObject) => HttpSuccess | undefined;
}

/**
 * A ready `DurableHandler` (mode `none`) for an HTTP API that offers neither an idempotency key nor
 * a lookup: each attempt makes one `POST url` with the body built by `options.body` and no key
 * (the provider could not use one), classified as `idempotencyKeyHandler` classifies. A request
 * that provably was not applied (429/503, honouring `Retry-After`; a refused connection) is sent
 * again within the budget; a refusal (4xx other than 408/409/429) fails the operation at once; an
 * answer that leaves it open whether the effect happened (a timeout, a reset, 408, 409, other 5xx,
 * an unreadable 2xx) is never resent, since a resend could apply it twice: the operation ends
 * `outcome_unknown`, whose sentence says to check `providerName` for `describe(args)` made in the
 * attempts' window, then resolve. `reconcile` is unsupported. Nothing it logs carries arguments,
 * bodies or headers.
 */
export function unkeyedHandler(options: UnkeyedHandlerOptions): DurableHandler {
  return new UnkeyedHandler(options);
}

class UnkeyedHandler implements DurableHandler {
  readonly mode = 'none' as const;
  readonly policy?: RetryPolicy;
  readonly resultSchema?: z.ZodObject;
  readonly #options: UnkeyedHandlerOptions;
  readonly #clock: Clock;
  readonly #providerName: string;

  constructor(options: UnkeyedHandlerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#providerName = options.providerName ?? new URL(options.url).host;
    if (options.policy !== undefined) this.policy = retryPolicy(options.policy);
    if (options.resultSchema !== undefined) this.resultSchema = options.resultSchema;
  }

  async dispatch(operation: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome> {
    return dispatchJsonPost({
      url: this.#options.url,
      headers: { ...this.#options.headers },
      body: (args) => this.#options.body(args),
      result: this.#options.result,
      args: operation.args ?? {},
      context,
      now: () => this.#clock.now(),
    });
  }

  /** Mode `none`: the provider offers no lookup. */
  async reconcile(): Promise<ReconcileOutcome> {
    return { kind: 'unsupported' };
  }

  successFields(operation: OperationRecord, resourceId: string): JsonObject {
    return this.#options.successFields?.(operation.args ?? {}, resourceId) ?? {};
  }

  nextAction(operation: OperationRecord, context: UnknownOutcomeContext): string {
    const what = describeEffect(this.#options.describe, operation.args ?? {});
    return (
      `Check ${this.#providerName} for ${what} made ${windowText(context)} (this provider keeps no key: ` +
      `provider key ${context.providerKey} was not sent, so look for the effect itself); ${RESOLVE_ADVICE}`
    );
  }
}
