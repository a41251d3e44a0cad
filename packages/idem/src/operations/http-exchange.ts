import type { JsonObject } from '../core/json.js';
import { timeoutSignal } from '../core/timeout-signal.js';

/**
 * One HTTP request's end: an answer (status, headers, the whole body text), or none (`reason`: a
 * short, body-free name such as `timeout`, `aborted`, `connection_refused`, `connection_closed`).
 */
export type HttpExchange =
  | { readonly kind: 'answered'; readonly status: number; readonly headers: Headers; readonly text: string }
  | { readonly kind: 'no_answer'; readonly reason: string };

/**
 * How a write request (one that may apply an effect) ended, the one question being "was it
 * applied?":
 * - `applied`: yes (2xx whose body is a JSON object); `replayed` when the server said it answered
 *   from its key store (`Idempotent-Replayed: true`);
 * - `rejected`: no, and the same request would be refused again (4xx other than 408/409/429);
 * - `throttled`: no, but later it may be (429 and 503, with `Retry-After` when readable; status 0
 *   and `unsent` when the connection was refused, so no byte of the request was sent);
 * - `ambiguous`: maybe (timeout, reset, abort, 408, 409, other 5xx and 1xx/3xx, an unreadable 2xx).
 */
export type WriteClassification =
  | {
      readonly kind: 'applied';
      readonly status: number;
      readonly body: JsonObject;
      readonly replayed: boolean;
    }
  | { readonly kind: 'rejected'; readonly status: number; readonly reason: string }
  | {
      readonly kind: 'throttled';
      readonly status: number;
      readonly retryAfterMs?: number;
      readonly unsent?: boolean;
    }
  | { readonly kind: 'ambiguous'; readonly reason: string };

export interface HttpRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as is (the caller serialises it). */
  readonly body?: string;
}

/**
 * Makes exactly one request (a redirect is returned as the answer, not followed) and reads its whole body, within `timeoutMs` (a GC-safe timer, see
 * `timeoutSignal`) and until `signal` aborts. Never retries and never throws for a network
 * outcome: it returns `no_answer` with a short reason (`aborted` when `signal` aborted).
 */
export async function exchangeHttp(
  request: HttpRequest,
  options: { readonly timeoutMs: number; readonly signal?: AbortSignal },
): Promise<HttpExchange> {
  const attempt = timeoutSignal(Math.max(1, Math.ceil(options.timeoutMs)), { signal: options.signal });
  try {
    const response = await fetch(request.url, {
      method: request.method,
      ...(request.headers === undefined ? {} : { headers: request.headers }),
      ...(request.body === undefined ? {} : { body: request.body }),
      // A redirect is an answer, never followed: a 307/308 would resend the body (and headers)
      // to another URL, maybe another host, outside the one request this makes.
      redirect: 'manual',
      signal: attempt.signal,
    });
    const text = await response.text();
    return { kind: 'answered', status: response.status, headers: response.headers, text };
  } catch (error) {
    return {
      kind: 'no_answer',
      reason: options.signal?.aborted === true ? 'aborted' : networkReason(error),
    };
  } finally {
    attempt.dispose();
  }
}

/**
 * Classifies the end of a write request as the worker needs it (see `WriteClassification`). `now`
 * (epoch ms) turns a `Retry-After` HTTP-date into a delay. A refusal's `reason` is the body's
 * `error` string when it is one (a short code such as `idempotency_key_conflict`), else `http_<status>`.
 */
export function classifyWrite(exchange: HttpExchange, now: number): WriteClassification {
  if (exchange.kind === 'no_answer')
    return exchange.reason === 'connection_refused'
      ? { kind: 'throttled', status: 0, unsent: true }
      : { kind: 'ambiguous', reason: exchange.reason };
  const { status, headers, text } = exchange;
  if (status >= 200 && status < 300) {
    const body = parseJsonObject(text);
    if (body === undefined) return { kind: 'ambiguous', reason: `unreadable ${status} body` };
    const replayed = headers.get('idempotent-replayed')?.toLowerCase() === 'true';
    return { kind: 'applied', status, body, replayed };
  }
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfter(headers.get('retry-after'), now);
    return retryAfterMs === undefined
      ? { kind: 'throttled', status }
      : { kind: 'throttled', status, retryAfterMs };
  }
  if (status >= 400 && status < 500 && status !== 408 && status !== 409) {
    const error = parseJsonObject(text)?.error;
    return {
      kind: 'rejected',
      status,
      reason: typeof error === 'string' && /^[\w.:-]{1,64}$/.test(error) ? error : `http_${status}`,
    };
  }
  return { kind: 'ambiguous', reason: `http_${status}` };
}

/** A short, body-free name for why a request got no answer: timeout, connection_refused, … */
export function networkReason(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError') return 'timeout';
  if (name === 'AbortError') return 'aborted';
  const code = causeCode(error);
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'connection_closed';
  return code === undefined ? 'network_error' : `network_error:${code}`;
}

function causeCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `text` as a JSON object, or undefined when it is not one (invalid JSON, an array, a scalar). */
export function parseJsonObject(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as JsonObject)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3). A
 * date in the past is 0; anything unreadable is undefined (the caller falls back to its backoff).
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
