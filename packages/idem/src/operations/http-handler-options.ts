import type { z } from 'zod';
import type { Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type { DispatchOutcome, HandlerCallContext, UnknownOutcomeContext } from './durable-handler.js';
import { classifyWrite, exchangeHttp } from './http-exchange.js';

/** What a success at the provider is, read from its 2xx answer: the resource and business fields. */
export interface HttpSuccess {
  /** The provider's id of what the request made (e.g. `pay_123`); becomes `resource_id`. */
  readonly resourceId: string;
  /** Business fields of the stored result, beside `status`, `operation_id`, `resource_id`. */
  readonly fields: JsonObject;
}

/**
 * What every ready HTTP handler takes (`idempotencyKeyHandler`, `clientReferenceHandler`,
 * `unkeyedHandler`).
 */
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
  /**
   * This tool's own retry budget and attempts, any of `RetryPolicy`'s fields (the others
   * `DEFAULT_RETRY_POLICY`'s); absent: the worker's policy. Checked at once (RangeError).
   */
  readonly policy?: Partial<RetryPolicy>;
  /**
   * The business fields of a success, the durable tool's own `resultSchema`: a success's fields
   * that do not fit it are left out of the stored result and logged (see `DurableHandler`).
   */
  readonly resultSchema?: z.ZodObject;
  /** Names the provider in `outcome_unknown` sentences; default the URL's host. */
  readonly providerName?: string;
  /**
   * What the effect is, from the operation's arguments, as the `outcome_unknown` sentence
   * (`nextAction`) names it for an operator: "Check <provider> for <describe(args)> …", e.g.
   * `(a) => \`a payment of ${a.amount_cents} ${a.currency}\``. Default "a request"; so is the
   * answer of a throw, a non-string or an empty string. The sentence is stored with the operation
   * and shown to its caller and operators (never logged): name what identifies the effect, never
   * a secret. Pure.
   */
  readonly describe?: (args: JsonObject) => string;
  /** Wall time, to read a `Retry-After` HTTP-date. Default: the system clock. */
  readonly clock?: Clock;
}

/** `describe(args)` for the `nextAction` sentence, or "a request" when absent, throwing or not a non-empty string. */
export function describeEffect(describe: HttpHandlerOptions['describe'], args: JsonObject): string {
  if (describe === undefined) return 'a request';
  try {
    const text: unknown = describe(args);
    return typeof text === 'string' && text !== '' ? text : 'a request';
  } catch {
    return 'a request';
  }
}

/** "between <from ISO> and <to ISO>": the window of an `outcome_unknown` sentence. */
export function windowText(context: UnknownOutcomeContext): string {
  return `between ${new Date(context.from).toISOString()} and ${new Date(context.to).toISOString()}`;
}

/** The end of every ready handler's `outcome_unknown` sentence: who settles it, and what not to do before. */
export const RESOLVE_ADVICE =
  'then have an operator resolve this operation as succeeded (with the resource id) or failed. ' +
  'Do not retry with a new idempotency_key before that: it could apply the effect twice.';

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
