export {
  IdemError,
  isIdemError,
  toIdemError,
  isAbortReason,
  ERROR_CODES,
  NEXT_STEPS,
  storageCauseOf,
  type ErrorCode,
  type NextStep,
  type IdemErrorOptions,
  type StorageCause,
} from './core/errors.js';
export { systemClock, type Clock } from './core/clock.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './core/retry-policy.js';
export { validateIdempotencyKey, MAX_KEY_LENGTH } from './core/idempotency-key.js';
export { canonicalArguments, fingerprint } from './core/fingerprint.js';
export type { FingerprintSelection } from './core/fingerprint-selection.js';
export type { Scope, OperationIdentity } from './core/operation-identity.js';
export type { Receipt, Tombstone, Existing } from './core/receipt.js';
export type { JsonObject, JsonValue } from './core/json.js';
export type { Logger, LogFields } from './core/logger.js';
export { jsonLogger } from './log/json-logger.js';
export {
  toLogger,
  type LoggerOption,
  type PinoLike,
  type ConsoleLike,
  type LineWriter,
} from './log/to-logger.js';
export { intentDigest } from './core/intent-digest.js';
export { FaultPoints, type FaultPoint, type FaultAction } from './core/fault-points.js';
export { DEFAULT_SWEEP_BATCH_BUDGET_MS, DEFAULT_SWEEP_MAX_DUTY } from './core/batch-sizer.js';
export { DEFAULT_TOMBSTONE_TTL_MS } from './core/tombstone-ttl.js';
export {
  Executor,
  DEFAULT_RETENTION_MS,
  type Authorize,
  type IdempotentOperation,
  type CallRequest,
  type CallOutcome,
  type ExecutorOptions,
} from './executor/executor.js';
export type { EffectContext, EffectResult } from './executor/effect.js';
export { commitOnce, type CommitUnit, type CommitOutcome } from './executor/commit-once.js';
export * from './ports/index.js';
export {
  transition,
  startAttempt,
  requestCancel,
  resolve,
  type OperationPatch,
  type TransitionRequest,
  type AttemptStart,
  type Resolution,
} from './operations/ledger-transitions.js';
export { SqlStore, sqlStore, type SqlStoreOptions } from './adapters/sql/sql-store.js';
export type {
  CallSql,
  SqlConnection,
  SqlDialect,
  SqlDriver,
  SqlStatement,
  SqlTransactionOptions,
  SqlValue,
  SweepPacing,
} from './adapters/sql/sql-driver.js';
