import { systemClock, type Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import type { RecoveryMode } from './durable-handler.js';
import { classifyWrite, exchangeHttp, parseJsonObject } from './http-exchange.js';

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

    const exchange = await exchangeHttp(
      { method: 'POST', url: `${this.baseUrl}/deployments`, headers, body: JSON.stringify(body) },
      options,
    );
    const outcome = classifyWrite(exchange, this.#clock.now());
    if (outcome.kind !== 'applied') return outcome;
    const deploymentId = outcome.body.deployment_id;
    if (typeof deploymentId !== 'string' || deploymentId.length === 0)
      return { kind: 'ambiguous', reason: `unreadable ${outcome.status} body` };
    return { kind: 'created', deploymentId, body: outcome.body, replayed: outcome.replayed };
  }

  /** `GET /deployments?client_reference=R`: the oldest deployment carrying `reference`, if any. */
  async findByReference(reference: string, options: FindOptions): Promise<FindOutcome> {
    const url = `${this.baseUrl}/deployments?client_reference=${encodeURIComponent(reference)}`;
    const exchange = await exchangeHttp({ method: 'GET', url }, options);
    if (exchange.kind === 'no_answer') return { kind: 'failed', reason: exchange.reason };
    if (exchange.status !== 200) return { kind: 'failed', reason: `http_${exchange.status}` };
    const list = parseJsonObject(exchange.text)?.deployments;
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

export { networkReason, parseRetryAfter } from './http-exchange.js';
