import type { SignalOption } from './maybe-async.js';

/** One sweep's clock, retention and batching (see `Housekeeping.sweep`). */
export interface SweepOptions extends SignalOption {
  /** Epoch ms taken as "now" for expiry. */
  readonly now: number;
  /** How long a tombstone outlives its record, ms. */
  readonly tombstoneTtlMs: number;
  /** Most rows per transaction. */
  readonly batchSize: number;
  /**
   * How long one batch transaction should take, ms (default `DEFAULT_SWEEP_BATCH_BUDGET_MS`). A
   * store whose batch holds a lock that callers wait for (SQLite's single writer) MUST size each
   * batch (at most `batchSize` rows) from how long the previous ones took, to this budget whenever
   * a caller is waiting for the lock; while a backlog is left and none is, it MAY stretch the budget
   * (at most `SWEEP_BACKLOG_BUDGET_FACTOR` times). Others MAY ignore it.
   */
  readonly batchBudgetMs?: number;
  /**
   * Most share of the sweep's wall time its batches hold the lock, in (0, 1] (default
   * `DEFAULT_SWEEP_MAX_DUTY`); a batch's wait for the lock behind callers does not count. A store
   * whose batches block callers MUST pause between batches to keep this ratio. Others MAY ignore
   * it, but MUST refuse a value outside (0, 1].
   */
  readonly maxDuty?: number;
  /** Stop after this many batches (default: until nothing is left). */
  readonly maxBatches?: number;
  /**
   * Delete outbox messages delivered at least this long ago, ms. Unset: delivered messages are
   * kept. Dead letters and undelivered messages are never swept.
   */
  readonly outboxRetentionMs?: number;
}

/** What one sweep did. */
export interface SweepResult {
  /** Final records past their retention turned into tombstones. */
  readonly tombstoned: number;
  /** Tombstones past their own expiry deleted. */
  readonly tombstonesDeleted: number;
  /** Delivered outbox messages deleted (0 unless `outboxRetentionMs` was given). */
  readonly outboxDeleted: number;
  /** Transactions the sweep took. */
  readonly batches: number;
}

/** Retention: what expires, and when it goes. */
export interface Housekeeping {
  /**
   * MUST turn final records past `expiresAt` into tombstones (with their attempts deleted) and
   * delete tombstones past theirs, each batch in its own short transaction; records that are not
   * final never expire. A batch MAY commit without waiting for the disk, but MUST NOT commit a
   * caller's write in the same transaction.
   */
  sweep(options: SweepOptions): Promise<SweepResult>;
}
