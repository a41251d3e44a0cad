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

/** How `idempotencyKeyHandler` sends a request with an `Idempotency-Key` header to an HTTP API. */
export interface IdempotencyKeyHandlerOptions extends HttpHandlerOptions {
  /**
   * The JSON request body, from the operation's arguments (the tool's validated input). Pure. A
   * throw means arguments the provider cannot be sent: the operation fails `invalid_argument`,
   * nothing is sent. The tool's `idempotency_key`/`workspace` are Idem's, not the provider's.
   */
  readonly body: (args: JsonObject) => JsonObject;
  /**
   * The success read from a 2xx JSON body (and the arguments). Undefined (or a throw) when the
   * body does not say what was made: the answer then counts as ambiguous, and the worker resends
   * with the same key (the provider replays its first answer). Pure.
   */
  readonly result: (response: JsonObject, args: JsonObject) => HttpSuccess | undefined;
  /**
   * How long the provider keeps an idempotency key, ms (Stripe: 24 h). The worker makes no resend
   * that could reach the provider after it may have forgotten the key; such an operation ends
   * `outcome_unknown`. Absent: the provider keeps keys longer than any operation lasts.
   */
  readonly providerKeyRetentionMs?: number;
}

/**
 * A ready `DurableHandler` (mode `key`) for an HTTP API that honours an `Idempotency-Key` header
 * (Stripe-style; the IETF httpapi draft): each attempt makes one `POST url` with
 * `Idempotency-Key: <providerKeyFor(operation id)>` (the same key on every attempt, in every
 * process), the body built by `options.body`, and classifies the answer as the worker needs:
 * 2xx with a success `options.result` can read: `created` (`replayed` on `Idempotent-Replayed:
 * true`); 401/403: `rejected` `forbidden`, other 4xx but 408/409/429: `rejected` `invalid_argument`
 * (never retried); 429/503: `throttled`, honouring `Retry-After`; a refused connection: `throttled`
 * and unsent; a timeout, a reset, 408, 409, other 5xx, an unreadable 2xx: `ambiguous` (the worker
 * resends with the same key, within `providerKeyRetentionMs`). An `outcome_unknown` sentence says
 * to check `providerName` for `describe(args)` with that key in the attempts' window, then resolve.
 * The promise rests on the provider's: one effect per key. Nothing it logs carries the key's
 * arguments, bodies or headers.
 */
export function idempotencyKeyHandler(options: IdempotencyKeyHandlerOptions): DurableHandler {
  return new IdempotencyKeyHandler(options);
}

class IdempotencyKeyHandler implements DurableHandler {
  readonly mode = 'key' as const;
  readonly providerKeyRetentionMs?: number;
  readonly policy?: RetryPolicy;
  readonly resultSchema?: z.ZodObject;
  readonly #options: IdempotencyKeyHandlerOptions;
  readonly #clock: Clock;
  readonly #providerName: string;

  constructor(options: IdempotencyKeyHandlerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#providerName = options.providerName ?? new URL(options.url).host;
    if (options.providerKeyRetentionMs !== undefined)
      this.providerKeyRetentionMs = options.providerKeyRetentionMs;
    if (options.policy !== undefined) this.policy = retryPolicy(options.policy);
    if (options.resultSchema !== undefined) this.resultSchema = options.resultSchema;
  }

  async dispatch(operation: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome> {
    return dispatchJsonPost({
      url: this.#options.url,
      headers: { ...this.#options.headers, 'idempotency-key': context.providerKey },
      body: (args) => this.#options.body(args),
      result: this.#options.result,
      args: operation.args ?? {},
      context,
      now: () => this.#clock.now(),
    });
  }

  /** Mode `key` settles by resending with the same key: there is no lookup. */
  async reconcile(): Promise<ReconcileOutcome> {
    return { kind: 'unsupported' };
  }

  successFields(operation: OperationRecord, resourceId: string): JsonObject {
    return this.#options.successFields?.(operation.args ?? {}, resourceId) ?? {};
  }

  nextAction(operation: OperationRecord, context: UnknownOutcomeContext): string {
    const why =
      context.keyRetentionPassedMs === undefined
        ? ''
        : `No resend was made: ${this.#providerName} keeps an Idempotency-Key for ` +
          `${context.keyRetentionPassedMs} ms and may have forgotten this one, so a resend could apply it again. `;
    const what = describeEffect(this.#options.describe, operation.args ?? {});
    return (
      `${why}Check ${this.#providerName} for ${what} with Idempotency-Key ${context.providerKey} made ` +
      `${windowText(context)}; ${RESOLVE_ADVICE}`
    );
  }
}
