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
import { exchangeHttp, parseJsonObject } from './http-exchange.js';
import {
  describeEffect,
  dispatchJsonPost,
  readSuccess,
  RESOLVE_ADVICE,
  windowText,
  type HttpHandlerOptions,
  type HttpSuccess,
} from './http-handler-options.js';

/** How `clientReferenceHandler` sends a body carrying the provider key as a reference, and searches by it. */
export interface ClientReferenceHandlerOptions extends HttpHandlerOptions {
  /**
   * The JSON request body, from the operation's arguments; the handler adds the provider key
   * under `referenceField`. Pure; a throw fails the operation `invalid_argument`, nothing sent.
   */
  readonly body: (args: JsonObject) => JsonObject;
  /** The body field that carries the reference. Default `client_reference`. */
  readonly referenceField?: string;
  /**
   * The success read from a 2xx JSON body, and from one search match. Undefined (or a throw):
   * the answer says nothing readable (ambiguous). Pure.
   */
  readonly result: (response: JsonObject, args: JsonObject) => HttpSuccess | undefined;
  /** The search URL for one reference, e.g. `(r) => \`${base}/orders?client_reference=${encodeURIComponent(r)}\``. */
  readonly searchUrl: (reference: string) => string;
  /**
   * The matches in a 200 search answer (e.g. `(r) => r.data`). Undefined, or not an array of
   * objects: unreadable (the lookup settles nothing). An empty array proves there is none.
   */
  readonly matches: (response: JsonObject) => unknown;
  /**
   * How long after the worker abandoned a request the provider may still apply it, ms
   * (`DurableHandler.landingMs`). Default: the attempt timeout.
   */
  readonly landingMs?: number;
}

/**
 * A ready `DurableHandler` (mode `reference`) for an HTTP API that stores a reference the client
 * sends and can be searched by it: each attempt makes one `POST url` whose JSON body carries
 * `providerKeyFor(operation id)` under `referenceField`, classified as `idempotencyKeyHandler`
 * classifies; an attempt that may have been applied is settled by `GET searchUrl(reference)`:
 * a match (one whose `referenceField`, when present, is this reference) is `created`, an empty
 * list proves `absent` (the worker then sends again), anything else is `ambiguous` (looked up
 * again later, then `outcome_unknown`, whose sentence says to search `providerName` for
 * `describe(args)` with that reference in the attempts' window, then resolve). The promise rests
 * on the provider's: a search finds every request it applied with that reference.
 */
export function clientReferenceHandler(options: ClientReferenceHandlerOptions): DurableHandler {
  return new ClientReferenceHandler(options);
}

class ClientReferenceHandler implements DurableHandler {
  readonly mode = 'reference' as const;
  readonly landingMs?: number;
  readonly policy?: RetryPolicy;
  readonly resultSchema?: z.ZodObject;
  readonly #options: ClientReferenceHandlerOptions;
  readonly #field: string;
  readonly #clock: Clock;
  readonly #providerName: string;

  constructor(options: ClientReferenceHandlerOptions) {
    this.#options = options;
    this.#field = options.referenceField ?? 'client_reference';
    this.#clock = options.clock ?? systemClock;
    this.#providerName = options.providerName ?? new URL(options.url).host;
    if (options.landingMs !== undefined) this.landingMs = options.landingMs;
    if (options.policy !== undefined) this.policy = retryPolicy(options.policy);
    if (options.resultSchema !== undefined) this.resultSchema = options.resultSchema;
  }

  async dispatch(operation: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome> {
    return dispatchJsonPost({
      url: this.#options.url,
      headers: { ...this.#options.headers },
      body: (args) => ({ ...this.#options.body(args), [this.#field]: context.providerKey }),
      result: this.#options.result,
      args: operation.args ?? {},
      context,
      now: () => this.#clock.now(),
    });
  }

  async reconcile(operation: OperationRecord, context: HandlerCallContext): Promise<ReconcileOutcome> {
    let url: string;
    try {
      url = this.#options.searchUrl(context.providerKey);
    } catch {
      return { kind: 'ambiguous', reason: 'lookup invalid_search_url' };
    }
    const exchange = await exchangeHttp(
      { method: 'GET', url, headers: { ...this.#options.headers } },
      { timeoutMs: context.timeoutMs, signal: context.signal },
    );
    if (exchange.kind === 'no_answer') return { kind: 'ambiguous', reason: `lookup ${exchange.reason}` };
    if (exchange.status !== 200) return { kind: 'ambiguous', reason: `lookup http_${exchange.status}` };
    const response = parseJsonObject(exchange.text);
    let list: unknown;
    try {
      list = response === undefined ? undefined : this.#options.matches(response);
    } catch {
      list = undefined;
    }
    if (!Array.isArray(list) || !list.every(isObject))
      return { kind: 'ambiguous', reason: 'lookup unreadable 200 body' };
    const match = list.find(
      (item) => item[this.#field] === undefined || item[this.#field] === context.providerKey,
    );
    if (match === undefined) return { kind: 'absent' };
    const success = readSuccess(this.#options.result, match, operation.args ?? {});
    return success === undefined
      ? { kind: 'ambiguous', reason: 'lookup unreadable match' }
      : { kind: 'created', ...success };
  }

  successFields(operation: OperationRecord, resourceId: string): JsonObject {
    return this.#options.successFields?.(operation.args ?? {}, resourceId) ?? {};
  }

  nextAction(operation: OperationRecord, context: UnknownOutcomeContext): string {
    const what = describeEffect(this.#options.describe, operation.args ?? {});
    return (
      `Search ${this.#providerName} for ${what} with ${this.#field} ${context.providerKey}, created ` +
      `${windowText(context)}; ${RESOLVE_ADVICE}`
    );
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
