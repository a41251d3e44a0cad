import type { Clock, JsonObject } from 'idem';
import type { OperationRecord } from 'idem/store';
import {
  clientReferenceHandler,
  idempotencyKeyHandler,
  unkeyedHandler,
  type DurableHandler,
  type HttpSuccess,
  type RecoveryMode,
} from 'idem/operations';

/** The arguments of one deployment, as `start_deployment` takes them and the provider receives them. */
export interface DeploymentRequest {
  readonly service: string;
  readonly version: string;
}

export interface DeploymentHandlerOptions {
  /** The deployment provider's base URL, e.g. `http://127.0.0.1:4000` (a trailing slash is ignored). */
  readonly baseUrl: string;
  /** How the configured provider deduplicates (`idem provider --mode`); must match the provider's own. */
  readonly mode: RecoveryMode;
  /**
   * Mode `key`: how long the provider keeps an idempotency key, ms (`idem provider
   * --key-retention`); no resend is made once it may have forgotten one. Default: unbounded.
   */
  readonly providerKeyRetentionMs?: number;
  /** Wall time, to read a `Retry-After` HTTP-date. Default: the system clock. */
  readonly clock?: Clock;
}

/**
 * The reference server's durable operation "deploy `service` at `version`" (args `{ service,
 * version }`) against the demo deployment provider (`idem provider`), built only from the ready
 * handlers of `idem/operations`, as a user's own code would: mode `key` is `idempotencyKeyHandler`
 * (the provider key as `Idempotency-Key`), `reference` is `clientReferenceHandler` (as
 * `client_reference`, looked up with `GET /deployments?client_reference=R`), `none` is
 * `unkeyedHandler`. Each attempt is one `POST /deployments` with `{ service, version }`; args that
 * are not two strings fail `invalid_argument` before anything is sent. The stored result fields
 * are `{ deployment_id, service, version }`; the resource is the deployment.
 */
export function deploymentHandler(options: DeploymentHandlerOptions): DurableHandler {
  const base = options.baseUrl.replace(/\/+$/, '');
  const common = {
    url: `${base}/deployments`,
    body: deploymentBody,
    result: deploymentResult,
    successFields: (args: JsonObject, deploymentId: string) => fieldsOf(args, deploymentId),
    providerName: 'the deployment provider',
    describe: describeDeployment,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  };
  switch (options.mode) {
    case 'key':
      return idempotencyKeyHandler({
        ...common,
        ...(options.providerKeyRetentionMs === undefined
          ? {}
          : { providerKeyRetentionMs: options.providerKeyRetentionMs }),
      });
    case 'reference':
      return clientReferenceHandler({
        ...common,
        searchUrl: (reference) => `${base}/deployments?client_reference=${encodeURIComponent(reference)}`,
        matches: (response) => response.deployments,
      });
    case 'none':
      return unkeyedHandler(common);
  }
}

/**
 * The business fields of a deployment's success: `deployment_id` (the resource id) and the `service`
 * and `version` of the operation's args. Whether the worker or an operator established the success.
 */
export function deploymentFields(operation: OperationRecord, deploymentId: string): JsonObject {
  return fieldsOf(operation.args ?? {}, deploymentId);
}

/** `{ service, version }` from the record's args, or undefined when they are not two strings. */
export function deploymentArgs(operation: OperationRecord): DeploymentRequest | undefined {
  return requestOf(operation.args ?? {});
}

function requestOf(args: JsonObject): DeploymentRequest | undefined {
  const { service, version } = args;
  if (typeof service !== 'string' || typeof version !== 'string') return undefined;
  return { service, version };
}

function fieldsOf(args: JsonObject, deploymentId: string): JsonObject {
  const request = requestOf(args);
  return { deployment_id: deploymentId, service: request?.service ?? '', version: request?.version ?? '' };
}

/** The request body; args that are not two strings are never sent (the operation fails invalid_argument). */
function deploymentBody(args: JsonObject): JsonObject {
  const request = requestOf(args);
  if (request === undefined) throw new Error('service and version must be strings');
  return { service: request.service, version: request.version };
}

/** A deployment (a 2xx answer, or a search match) names itself by `deployment_id`. */
function deploymentResult(response: JsonObject, args: JsonObject): HttpSuccess | undefined {
  const id = response.deployment_id;
  return typeof id === 'string' && id !== '' ? { resourceId: id, fields: fieldsOf(args, id) } : undefined;
}

function describeDeployment(args: JsonObject): string {
  const request = requestOf(args);
  return request === undefined
    ? 'a deployment'
    : `a deployment of service ${JSON.stringify(request.service)} at version ${JSON.stringify(request.version)}`;
}
