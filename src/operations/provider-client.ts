import { systemClock, type Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import { timeoutSignal, type TimeoutSignal } from '../core/timeout-signal.js';
import type { RecoveryMode } from './durable-handler.js';

/**
 * Every outcome of one `POST /deployments`, in a closed union. The one question the worker needs
 * answered is "was it applied?":
 * - `created`: yes (2xx with a deployment id); `replayed` when the provider answered from its key store;
 * - `rejected`: definitely not, and the same request would be refused again (4xx other than
 *   408/409/429, e.g. 403, 422 including `idempotency_key_conflict`); never retried;
 * - `throttled`: definitely not, but later it may be (429 and 503 refuse before applying; status 0
 *   and `unsent` mean the connection was refused, so no byte of the request reached the provider);
 * - `ambiguous`: maybe (timeout, connection reset, 408, 409, other 5xx, a 2xx without a readable
 *   deployment id): whoever retries must reuse the key, reconcile, or report outcome_unknown.
 */
export type CreateOutcome =
  | {
      readonly kind: 'created';
      readonly deploymentId: string;
      readonly body: JsonObject;
      readonly replayed: boolean;
    }
  | { readonly kind: 'rejected'; readonly status: number; readonly reason: string }
  | {
      readonly kind: 'throttled';
      readonly status: number;
      readonly retryAfterMs?: number;
      /** True when the connection was refused (status 0): no byte of the request was sent. */
      readonly unsent?: boolean;
    }
  | { readonly kind: 'ambiguous'; readonly reason: string };

/** What a search by `client_reference` established: found, absent, or nothing (the search failed). */
export type FindOutcome =
  | {
      readonly kind: 'found';
      readonly deploymentId: string;
      readonly body: JsonObject;
      readonly count: number;
    }
  | { readonly kind: 'absent' }
  | { readonly kind: 'failed'; readonly reason: string };

export interface DeploymentRequest {
  readonly service: string;
  readonly version: string;
}

export interface CreateOptions {
  /** The same on every attempt of one operation: the provider key (`idem-<operation id>`). */
  readonly providerKey: string;
  /** `key`: send `Idempotency-Key`; `reference`: send `client_reference`; `none`: neither. */
  readonly mode: RecoveryMode;
  /** This attempt's budget; the request is abandoned (ambiguous) when it runs out. */
  readonly timeoutMs: number;
  /** Aborts the request (e.g. the worker lost its lease); the outcome is then ambiguous. */
  readonly signal?: AbortSignal;
}

export interface FindOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

export interface DeploymentProviderClientOptions {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:4000`. */
  readonly baseUrl: string;
  /** Wall time, to turn a `Retry-After` HTTP-date into a delay. Default: the system clock. */
  readonly clock?: Clock;
}

/**
 * The HTTP client of the deployment provider. It makes exactly one request per call and never
 * retries: the worker is the one retry layer, so that budgets and keys are decided in one place.
 * It never throws for a network or HTTP outcome; it classifies it. It logs nothing and keeps no body
 * beyond the returned deployment.
 */
export class DeploymentProviderClient {
  readonly baseUrl: string;
  readonly #clock: Clock;

  constructor(options: DeploymentProviderClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#clock = options.clock ?? systemClock;
  }

  /** One `POST /deployments`, carrying the provider key as the mode prescribes. */
  async create(request: DeploymentRequest, options: CreateOptions): Promise<CreateOutcome> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (options.mode === 'key') headers['idempotency-key'] = options.providerKey;
    const body: Record<string, string> = { service: request.service, version: request.version };
    if (options.mode === 'reference') body.client_reference = options.providerKey;

    let response: Response;
    let text: string;
    const attempt = attemptSignal(options);
    try {
      response = await fetch(`${this.baseUrl}/deployments`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: attempt.signal,
      });
      text = await response.text();
    } catch (error) {
      const reason = failureReason(error, options);
      // A refused connection carried no byte of the request: nothing can have been applied.
      return reason === 'connection_refused'
        ? { kind: 'throttled', status: 0, unsent: true }
        : { kind: 'ambiguous', reason };
    } finally {
      attempt.dispose();
    }

    const { status } = response;
    if (status >= 200 && status < 300) {
      const parsed = parseObject(text);
      const deploymentId = parsed?.deployment_id;
      if (parsed === undefined || typeof deploymentId !== 'string' || deploymentId.length === 0)
        return { kind: 'ambiguous', reason: `unreadable ${status} body` };
      const replayed = response.headers.get('idempotent-replayed')?.toLowerCase() === 'true';
      return { kind: 'created', deploymentId, body: parsed, replayed };
    }
    if (status === 429 || status === 503) {
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), this.#clock.now());
      return retryAfterMs === undefined
        ? { kind: 'throttled', status }
        : { kind: 'throttled', status, retryAfterMs };
    }
    if (status >= 400 && status < 500 && status !== 408 && status !== 409) {
      const error = parseObject(text)?.error;
      return { kind: 'rejected', status, reason: typeof error === 'string' ? error : `http_${status}` };
    }
    return { kind: 'ambiguous', reason: `http_${status}` };
  }

  /** `GET /deployments?client_reference=R`: the oldest deployment carrying `reference`, if any. */
  async findByReference(reference: string, options: FindOptions): Promise<FindOutcome> {
    const url = `${this.baseUrl}/deployments?client_reference=${encodeURIComponent(reference)}`;
    let response: Response;
    let text: string;
    const attempt = attemptSignal(options);
    try {
      response = await fetch(url, { signal: attempt.signal });
      text = await response.text();
    } catch (error) {
      return { kind: 'failed', reason: failureReason(error, options) };
    } finally {
      attempt.dispose();
    }
    if (response.status !== 200) return { kind: 'failed', reason: `http_${response.status}` };
    const list = parseObject(text)?.deployments;
    if (!Array.isArray(list)) return { kind: 'failed', reason: 'unreadable 200 body' };
    const first: unknown = list[0];
    if (first === undefined) return { kind: 'absent' };
    if (typeof first !== 'object' || first === null || Array.isArray(first))
      return { kind: 'failed', reason: 'unreadable 200 body' };
    const deploymentId = (first as JsonObject).deployment_id;
    if (typeof deploymentId !== 'string') return { kind: 'failed', reason: 'unreadable 200 body' };
    return { kind: 'found', deploymentId, body: first as JsonObject, count: list.length };
  }
}

/**
 * The attempt's own timeout (a TimeoutError), combined with the caller's signal when there is one.
 * The timer is held until it fires or the caller aborts, whatever the garbage collector does; the
 * caller disposes it once the body is read, which clears the timer and its listener on the caller's
 * signal (a worker's lease signal outlives many attempts).
 */
function attemptSignal(options: { timeoutMs: number; signal?: AbortSignal }): TimeoutSignal {
  return timeoutSignal(Math.max(1, Math.ceil(options.timeoutMs)), { signal: options.signal });
}

/** Why a request failed: the caller's abort, this call's timeout, or the network. */
function failureReason(error: unknown, options: { signal?: AbortSignal }): string {
  if (options.signal?.aborted === true) return 'aborted';
  return networkReason(error);
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

function parseObject(text: string): JsonObject | undefined {
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
