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
export { resolveOperation, type SuccessFieldsByOperation } from './operation-resolver.js';
export { parseRetryAfter } from './http-exchange.js';
export { Worker, type WorkerOptions } from './worker.js';
export { OperationProcessor, type OperationProcessorOptions } from './operation-processor.js';
export { OperationWriter, type Next, type OperationWriterOptions } from './operation-writer.js';
export {
  operationBudget,
  stopMessage,
  successResult,
  type Budget,
  type StopReason,
} from './operation-budget.js';
export {
  DEFAULT_OUTBOX_MAX_ATTEMPTS,
  OutboxDispatcher,
  type OutboxDispatcherOptions,
} from './outbox-dispatcher.js';
export { LeaseKeeper, type LeaseKeeperOptions } from './lease-keeper.js';
export { PollingLoop } from './polling-loop.js';
