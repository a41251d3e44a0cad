/**
 * `idem`: what a tool author needs to make a mutating operation safe to retry. The `Executor` and
 * the operations it runs (`IdempotentOperation`, `DurableOperation`), a call's request and outcome,
 * Idem's errors and their stable codes, the clock, the logger, the retry policy of durable work.
 * Stores come from `idem/sqlite`, `idem/postgres` or an ORM entry; what a store or integration
 * author implements is in `idem/store`; fakes and the store contract suite in `idem/testing`.
 */
export {
  IdemError,
  isIdemError,
  toIdemError,
  isAbortReason,
  ERROR_CODES,
  NEXT_STEPS,
  type ErrorCode,
  type NextStep,
  type IdemErrorOptions,
  storageCauseFields,
} from './core/errors.js';
export { systemClock, type Clock } from './core/clock.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './core/retry-policy.js';
export type { FingerprintSelection } from './core/fingerprint-selection.js';
export type { OperationIdentity } from './core/operation-identity.js';
export type { JsonObject, JsonValue } from './core/json.js';
export { silentLogger, type Logger, type LogFields } from './core/logger.js';
export { timeoutSignal, type TimeoutSignal, type TimeoutSignalOptions } from './core/timeout-signal.js';
export { parseDuration } from './core/duration.js';
export { jsonLogger } from './log/json-logger.js';
export {
  toLogger,
  type LoggerOption,
  type PinoLike,
  type ConsoleLike,
  type LineWriter,
} from './log/to-logger.js';
export { intentDigest } from './core/intent-digest.js';
export {
  Executor,
  DEFAULT_RETENTION_MS,
  type Authorize,
  type IdempotentOperation,
  type DurableOperation,
  type CallRequest,
  type ExecutorOptions,
} from './executor/executor.js';
export type { CallOutcome, OutcomeStatus, OutcomeEvidence } from './executor/call-outcome.js';
export type { EffectContext, EffectResult } from './executor/effect.js';
export type { OutboxIntent } from './ports/receipt-store.js';
export type { IdemStore } from './ports/idem-store.js';
export {
  observeWaitingOperations,
  type ObserveWaitingOptions,
} from './telemetry/observe-waiting-operations.js';
