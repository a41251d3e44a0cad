import { systemClock, type Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type {
  DispatchOutcome,
  DurableHandler,
  HandlerCallContext,
  ReconcileOutcome,
  UnknownOutcomeContext,
} from './durable-handler.js';
import { classifyWrite, exchangeHttp } from './http-exchange.js';

/** What a success at the provider is, read from its 2xx answer: the resource and business fields. */
export interface HttpSuccess {
  /** The provider's id of what the request made (e.g. `pay_123`); becomes `resource_id`. */
  readonly resourceId: string;
  /** Business fields of the stored result, beside `status`, `operation_id`, `resource_id`. */
  readonly fields: JsonObject;
}

/** What both ready HTTP handlers take (`idempotencyKeyHandler`, `clientReferenceHandler`). */
export interface HttpHandlerOptions {
  /** The endpoint each attempt POSTs to, e.g. `https://api.example.com/payments`. */
  readonly url: string;
  /**
   * The business fields of a success known only by its resource id (an operator resolves the
   * operation), so that it has the shape of an automatic one. Absent: status, operation_id and
   * resource_id only. Pure.
   */
  readonly successFields?: (args: JsonObject, resourceId: string) => JsonObject;
  /** Extra request headers (e.g. `authorization`); never logged. */
  readonly headers?: Readonly<Record<string, string>>;
  /** This tool's own retry budget and attempts; default the worker's policy. */
  readonly policy?: RetryPolicy;
  /** Names the provider in `outcome_unknown` sentences; default the URL's host. */
  readonly providerName?: string;
  /** Wall time, to read a `Retry-After` HTTP-date. Default: the system clock. */
  readonly clock?: Clock;
}

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
 * resends with the same key, within `providerKeyRetentionMs`). The promise rests on the provider's:
 * one effect per key. Nothing it logs carries the key's arguments, bodies or headers.
 */
export function idempotencyKeyHandler(options: IdempotencyKeyHandlerOptions): DurableHandler {
  return new IdempotencyKeyHandler(options);
}

class IdempotencyKeyHandler implements DurableHandler {
  readonly mode = 'key' as const;
  readonly providerKeyRetentionMs?: number;
  readonly policy?: RetryPolicy;
  readonly #options: IdempotencyKeyHandlerOptions;
  readonly #clock: Clock;
  readonly #providerName: string;

  constructor(options: IdempotencyKeyHandlerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#providerName = options.providerName ?? new URL(options.url).host;
    if (options.providerKeyRetentionMs !== undefined)
      this.providerKeyRetentionMs = options.providerKeyRetentionMs;
    if (options.policy !== undefined) this.policy = options.policy;
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

  nextAction(_operation: OperationRecord, context: UnknownOutcomeContext): string {
    const why =
      context.keyRetentionPassedMs === undefined
        ? ''
        : `No resend was made: ${this.#providerName} keeps an Idempotency-Key for ` +
          `${context.keyRetentionPassedMs} ms and may have forgotten this one, so a resend could apply it again. `;
    return (
      `${why}Check ${this.#providerName} for a request with Idempotency-Key ${context.providerKey} made between ` +
      `${new Date(context.from).toISOString()} and ${new Date(context.to).toISOString()}; then have an operator ` +
      `resolve this operation as succeeded (with the resource id) or failed. Do not retry with a new ` +
      `idempotency_key before that: it could apply the effect twice.`
    );
  }
}

/**
 * One JSON `POST` of an effect, classified as `DispatchOutcome` (shared by the ready handlers):
 * arguments `body` cannot serialise are `rejected` unsent; a 2xx is `created` only when `result`
 * reads a non-empty resource id from it (else `ambiguous`); 401/403 are `forbidden`, other
 * refusals `invalid_argument`; the rest as `classifyWrite` says.
 */
export async function dispatchJsonPost(request: {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: (args: JsonObject) => JsonObject;
  readonly result: (response: JsonObject, args: JsonObject) => HttpSuccess | undefined;
  readonly args: JsonObject;
  readonly context: HandlerCallContext;
  readonly now: () => number;
}): Promise<DispatchOutcome> {
  const { args, context } = request;
  let body: string;
  try {
    body = JSON.stringify(request.body(args));
  } catch {
    return { kind: 'rejected', code: 'invalid_argument', status: 0, reason: 'invalid_args' };
  }
  const exchange = await exchangeHttp(
    {
      method: 'POST',
      url: request.url,
      headers: { ...request.headers, 'content-type': 'application/json' },
      body,
    },
    { timeoutMs: context.timeoutMs, signal: context.signal },
  );
  const outcome = classifyWrite(exchange, request.now());
  switch (outcome.kind) {
    case 'applied': {
      const success = readSuccess(request.result, outcome.body, args);
      return success === undefined
        ? { kind: 'ambiguous', reason: `unreadable ${outcome.status} body` }
        : { kind: 'created', ...success, replayed: outcome.replayed };
    }
    case 'rejected':
      return {
        kind: 'rejected',
        code: outcome.status === 401 || outcome.status === 403 ? 'forbidden' : 'invalid_argument',
        status: outcome.status,
        reason: outcome.reason,
      };
    default:
      return outcome;
  }
}

/** `result(response, args)` when it names a non-empty resource id; undefined otherwise or on a throw. */
export function readSuccess(
  result: (response: JsonObject, args: JsonObject) => HttpSuccess | undefined,
  response: JsonObject,
  args: JsonObject,
): HttpSuccess | undefined {
  let success: HttpSuccess | undefined;
  try {
    success = result(response, args);
  } catch {
    return undefined;
  }
  if (success === undefined || typeof success.resourceId !== 'string' || success.resourceId === '')
    return undefined;
  return { resourceId: success.resourceId, fields: success.fields };
}
