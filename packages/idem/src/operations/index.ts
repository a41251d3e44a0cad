/**
 * The operations folder's internal barrel, for the tests: the public entry (`idem/operations`,
 * public.ts) and the worker's parts that are not part of it.
 */
export * from './public.js';
export { parseRetryAfter } from './http-exchange.js';
export { Worker } from './worker.js';
export { OperationProcessor, type OperationProcessorOptions } from './operation-processor.js';
export { OperationWriter, type Next, type OperationWriterOptions } from './operation-writer.js';
export {
  operationBudget,
  stopMessage,
  successResult,
  type Budget,
  type StopReason,
} from './operation-budget.js';
export { OutboxDispatcher } from './outbox-dispatcher.js';
export { LeaseKeeper, type LeaseKeeperOptions } from './lease-keeper.js';
export { PollingLoop } from './polling-loop.js';
