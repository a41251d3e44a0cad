import type { JsonObject } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import type {
  DispatchOutcome,
  DurableHandler,
  HandlerCallContext,
  ReconcileOutcome,
  RecoveryMode,
  UnknownOutcomeContext,
} from './durable-handler.js';
import type { DeploymentProviderClient, DeploymentRequest } from './provider-client.js';

export interface DeploymentHandlerOptions {
  readonly client: DeploymentProviderClient;
  /** How the configured provider deduplicates; must match the provider's own mode. */
  readonly mode: RecoveryMode;
  /**
   * Mode `key`: how long the provider keeps an idempotency key, ms (`idem provider
   * --key-retention`); no resend is made once it may have forgotten one. Default: unbounded.
   */
  readonly providerKeyRetentionMs?: number;
}

/**
 * The durable operation "deploy `service` at `version`" (args `{ service, version }`) against the
 * deployment provider. The provider key travels as `Idempotency-Key` in mode `key` and as
 * `client_reference` in mode `reference`; reconciliation searches by that reference.
 * The stored result fields are `{ deployment_id, service, version }`; the resource is the deployment.
 */
export class DeploymentHandler implements DurableHandler {
  readonly mode: RecoveryMode;
  readonly providerKeyRetentionMs?: number;
  readonly #client: DeploymentProviderClient;

  constructor(options: DeploymentHandlerOptions) {
    this.#client = options.client;
    this.mode = options.mode;
    if (options.providerKeyRetentionMs !== undefined)
      this.providerKeyRetentionMs = options.providerKeyRetentionMs;
  }

  async dispatch(operation: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome> {
    const request = deploymentArgs(operation);
    // Malformed args never reach the provider: definite, and the same args would fail again.
    if (request === undefined)
      return { kind: 'rejected', code: 'invalid_argument', status: 0, reason: 'invalid_args' };
    const outcome = await this.#client.create(request, {
      providerKey: context.providerKey,
      mode: this.mode,
      timeoutMs: context.timeoutMs,
      signal: context.signal,
    });
    switch (outcome.kind) {
      case 'created':
        return {
          kind: 'created',
          resourceId: outcome.deploymentId,
          fields: deploymentFields(operation, outcome.deploymentId),
          replayed: outcome.replayed,
        };
      case 'rejected':
        return {
          kind: 'rejected',
          code: outcome.status === 403 ? 'forbidden' : 'invalid_argument',
          status: outcome.status,
          reason: outcome.reason,
        };
      default:
        return outcome;
    }
  }

  /** Mode `reference` only: the deployment carrying this provider key as its `client_reference`. */
  async reconcile(operation: OperationRecord, context: HandlerCallContext): Promise<ReconcileOutcome> {
    if (this.mode !== 'reference') return { kind: 'unsupported' };
    const request = deploymentArgs(operation);
    const found = await this.#client.findByReference(context.providerKey, {
      timeoutMs: context.timeoutMs,
      signal: context.signal,
    });
    if (found.kind === 'absent') return found;
    if (found.kind === 'failed') return { kind: 'ambiguous', reason: `lookup ${found.reason}` };
    return {
      kind: 'created',
      resourceId: found.deploymentId,
      fields: {
        deployment_id: found.deploymentId,
        service: request?.service ?? stringField(found.body.service),
        version: request?.version ?? stringField(found.body.version),
      },
    };
  }

  /** `{ deployment_id, service, version }`, as a dispatched deployment's result has them. */
  successFields(operation: OperationRecord, resourceId: string): JsonObject {
    return deploymentFields(operation, resourceId);
  }

  nextAction(operation: OperationRecord, context: UnknownOutcomeContext): string {
    const request = deploymentArgs(operation);
    const what =
      request === undefined
        ? 'a deployment'
        : `a deployment of service ${JSON.stringify(request.service)} at version ${JSON.stringify(request.version)}`;
    const via =
      this.mode === 'key'
        ? ` with Idempotency-Key ${context.providerKey}`
        : this.mode === 'reference'
          ? ` with client_reference ${context.providerKey}`
          : ` (provider key ${context.providerKey} was not sent: this provider keeps no key)`;
    const why =
      context.keyRetentionPassedMs === undefined
        ? ''
        : `No resend was made: the provider keeps an Idempotency-Key for ${context.keyRetentionPassedMs} ms ` +
          `and may have forgotten this one, so a resend could deploy again. `;
    return (
      `${why}Check the deployment provider for ${what}${via} created between ` +
      `${new Date(context.from).toISOString()} and ${new Date(context.to).toISOString()}; then have an ` +
      `operator resolve this operation as succeeded (with the deployment id) or failed. Do not retry ` +
      `with a new idempotency_key before that: it could deploy twice.`
    );
  }
}

/**
 * The business fields of a deployment's success: `deployment_id` (the resource id) and the `service`
 * and `version` of the operation's args. Whether the worker or an operator established the success.
 */
export function deploymentFields(operation: OperationRecord, deploymentId: string): JsonObject {
  const request = deploymentArgs(operation);
  return { deployment_id: deploymentId, service: request?.service ?? '', version: request?.version ?? '' };
}

/** `{ service, version }` from the record's args, or undefined when they are not two strings. */
export function deploymentArgs(operation: OperationRecord): DeploymentRequest | undefined {
  const service = operation.args?.service;
  const version = operation.args?.version;
  if (typeof service !== 'string' || typeof version !== 'string') return undefined;
  return { service, version };
}

function stringField(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
