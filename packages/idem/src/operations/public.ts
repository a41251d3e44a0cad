/**
 * `idem/operations`: everything needed to run your own durable tools (`registerDurableTool`):
 * the handler contract a tool's external effect implements (`DurableHandler`), the worker that
 * carries accepted operations to a final state (`startWorker`), the dispatcher that sends the
 * messages effects enqueue (`startOutboxDispatcher`), the retry policy they follow, and ready
 * handlers for HTTP APIs (`idempotencyKeyHandler`, `clientReferenceHandler`, `unkeyedHandler`).
 * The worker's internals (processor, writer, lease keeper, polling loop) are not part of it.
 */
export {
  providerKeyFor,
  type Applied,
  type DispatchOutcome,
  type DurableHandler,
  type HandlerCallContext,
  type ReconcileOutcome,
  type RecoveryMode,
  type UnknownOutcomeContext,
} from './durable-handler.js';
export {
  resolveOperation,
  givenFieldsProblem,
  propertiesOf,
  type KnownDeclaration,
  type ResolvingStore,
  type SuccessFieldsByOperation,
} from './operation-resolver.js';
export type { Resolution } from './ledger-transitions.js';
export { requestOperatorCancel, type OperatorCancel, type OperatorCancelResult } from './operator-cancel.js';
export type { OperatorResolution } from '../core/operation-changes.js';
export {
  startWorker,
  startOutboxDispatcher,
  type RunningLoops,
  type StartWorkerOptions,
  type StartOutboxDispatcherOptions,
} from './start-worker.js';
export type { WorkerOptions } from './worker.js';
export { DEFAULT_OUTBOX_MAX_ATTEMPTS, type OutboxDispatcherOptions } from './outbox-dispatcher.js';
export {
  DEFAULT_RETRY_POLICY,
  MAX_REFUSED_DELAY_MS,
  MIN_ATTEMPT_MS,
  type RetryPolicy,
} from '../core/retry-policy.js';
export type {
  OperationRecord,
  OperationError,
  OperationKind,
  OperatorChange,
} from '../core/operation-record.js';
export { OPERATION_STATES, type OperationState } from '../core/operation-state.js';
export { attemptView, type AttemptView } from './attempt-view.js';
export type { OperationIdentity } from '../core/operation-identity.js';
export type { HttpHandlerOptions, HttpSuccess } from './http-handler-options.js';
export { idempotencyKeyHandler, type IdempotencyKeyHandlerOptions } from './idempotency-key-handler.js';
export { clientReferenceHandler, type ClientReferenceHandlerOptions } from './client-reference-handler.js';
export { unkeyedHandler, type UnkeyedHandlerOptions } from './unkeyed-handler.js';
