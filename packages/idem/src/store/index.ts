/**
 * `idem/store`: what a store or integration author implements or builds on. The ports the
 * `Executor` and the worker use (`IdemStore` = receipts + ledger + outbox + housekeeping), the
 * records they hold, `SqlStore` (the whole store over one `SqlDriver`, as `idem/kysely`,
 * `idem/drizzle` and `idem/prisma` build it), the driver types, and the sweep's defaults. Check a
 * store with `storeContract` from `idem/testing`. A tool author needs none of this: see `idem`.
 */
export * from '../ports/index.js';
export type { MaybePromise, SignalOption } from '../ports/maybe-async.js';
export { storageCauseOf, type StorageCause } from '../core/errors.js';
export type { Scope, OperationIdentity } from '../core/operation-identity.js';
export type { Receipt, ReceiptView, Tombstone, Existing } from '../core/receipt.js';
export type {
  OperationRecord,
  OperationError,
  OperationKind,
  OperatorChange,
  AttemptRecord,
  OutboxMessage,
} from '../core/operation-record.js';
export type { OperationState } from '../core/operation-state.js';
export type { RecordChange, AttemptClosure } from '../core/operation-changes.js';
export { DEFAULT_SWEEP_BATCH_BUDGET_MS, DEFAULT_SWEEP_MAX_DUTY } from '../core/batch-sizer.js';
export { DEFAULT_TOMBSTONE_TTL_MS } from '../core/tombstone-ttl.js';
export { unstorableText } from '../core/unstorable-text.js';
export { SqlStore, sqlStore, type SqlStoreOptions } from '../adapters/sql/sql-store.js';
export type {
  CallSql,
  SqlConnection,
  SqlDialect,
  SqlDriver,
  SqlStatement,
  SqlTransactionOptions,
  SqlValue,
  SweepPacing,
} from '../adapters/sql/sql-driver.js';
