import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationRecord } from '../../core/operation-record.js';
import type { Existing } from '../../core/receipt.js';
import type { StoreCapabilities } from '../../ports/idem-store.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';

/** A statement parameter as every supported driver takes it. */
export type SqlValue = string | number | bigint | boolean | null;

/**
 * A statement, its text already in the engine's placeholder style. `name` (a stable, versioned
 * name) lets a driver that can (node-postgres) prepare it once per connection; others ignore it.
 */
export interface SqlStatement {
  readonly text: string;
  readonly name?: string;
}

/**
 * One connection or transaction, as the application's library holds it, able to run Idem's SQL.
 * Rows come back as objects keyed by column name (numbers MAY come as strings or bigints: the row
 * readers accept all three). Synchronous drivers return plain values, async ones promises.
 */
export interface SqlConnection {
  all<Row>(statement: SqlStatement, params: readonly SqlValue[]): MaybePromise<Row[]>;
  /**
   * Optional: rows as arrays of values in column order, where the driver can skip building objects
   * (better-sqlite3's raw mode). Statements that use it select every column under its own name.
   */
  values?(statement: SqlStatement, params: readonly SqlValue[]): MaybePromise<unknown[][]>;
  /**
   * Optional: the first row only, as `values` reads it (an array of values in column order), or
   * `undefined` when there is none. The driver MAY stop after that row; statements that use it
   * match at most one row. Where absent, `values` or `all` is used.
   */
  firstValues?(statement: SqlStatement, params: readonly SqlValue[]): MaybePromise<unknown[] | undefined>;
  /** Runs a statement that returns no rows; resolves with the number of rows it changed. */
  run(statement: SqlStatement, params: readonly SqlValue[]): MaybePromise<number>;
}

/**
 * The receipt statements of a call, where engines differ most (plan stability, optimistic insert):
 * each dialect writes them in its own words; every other statement is shared.
 */
export interface CallSql {
  /**
   * The record or tombstone of the identity's key in any version (see ReceiptTransaction.find): of
   * a record, its `ReceiptView` fields. Idem's dialects read only those columns (FOUND_COLUMNS).
   */
  find(conn: SqlConnection, identity: OperationIdentity): MaybePromise<Existing | undefined>;
  /**
   * Optional: `find` of several identities in one statement, answered in their order. A store on
   * an asynchronous driver reads the lock-free lookups of one turn with it (LookupBatcher). MUST
   * answer exactly what `find` of each would at the statement's time.
   */
  findMany?(
    conn: SqlConnection,
    identities: readonly OperationIdentity[],
  ): MaybePromise<(Existing | undefined)[]>;
  /** Insert or replace the record of `identity`. */
  upsert(conn: SqlConnection, record: OperationRecord): MaybePromise<void>;
  /**
   * Insert only where neither record nor tombstone of the key exists in any version; false when one
   * did (nothing written).
   * Only for dialects whose driver declares `optimisticInsert`.
   */
  insertNew?(conn: SqlConnection, record: OperationRecord): MaybePromise<boolean>;
}

/** What an engine's SQL differs in, declared rather than branched on. */
export interface SqlDialect {
  readonly engine: 'sqlite' | 'postgres';
  /** Rewrites `?` placeholders into the engine's (`$1`, `$2`, ... on PostgreSQL). */
  placeholders(sql: string): string;
  /** Appended to a subquery that picks rows to claim or sweep: ` FOR UPDATE SKIP LOCKED` or ``. */
  readonly skipLocked: string;
  /** Appended to the read of a row this transaction will change: ` FOR UPDATE` or `` (SQLite's write lock covers it). */
  readonly forUpdate: string;
  /** A boolean column's parameter: `true`/`false` on PostgreSQL, `1`/`0` on SQLite. */
  bool(value: boolean): SqlValue;
  readonly call: CallSql;
}

/** What a driver's transaction holds beside the transaction itself: an identity's lock, durability. */
export interface SqlTransactionOptions extends SignalOption {
  /**
   * Hold the lock of this identity's key, in every version of its operation, from before the body
   * on (an advisory transaction lock on PostgreSQL, `identityLockKey`; SQLite's write lock covers
   * every identity). With `tryLock`, report in `contended` whether
   * another transaction held it, after waiting for it all the same.
   */
  readonly lock?: { readonly identity: OperationIdentity; readonly tryLock?: boolean };
  /** `false`: housekeeping whose loss in a power failure only means doing it again. Default true. */
  readonly durable?: boolean;
}

/** Options a driver MAY honour to pace a long sweep (SQLite: one writer for everybody). */
export interface SweepPacing {
  /** The sweep's batches hold a lock callers wait for: size and space them (SweepOptions). */
  readonly blocksWriters: boolean;
  /** Told when a sweep has run long; the returned function is called when it ends. */
  longSweep?(): () => Promise<void>;
  /** Callers' writes waiting for the lock now (the sweep keeps its batches short while any do). */
  callersWaiting?(): number;
}

/**
 * What a database layer supplies for the shared SQL store (`sqlStore`): a dialect, a way to read,
 * and a way to run one write transaction that also is the application's own (`Tx`).
 * Driver errors MUST be translated into IdemError here: `busy` for lock waits (retryable, with
 * `retryAfterMs`), `unavailable` when the storage cannot take the call (retryable exactly when
 * transient), `outcome_unknown` for a connection lost during COMMIT, `internal` otherwise. An
 * error the body throws that is not a driver error MUST come out unchanged.
 */
export interface SqlDriver<Tx> {
  readonly dialect: SqlDialect;
  readonly capabilities: StoreCapabilities;
  readonly sweepPacing?: SweepPacing;
  /** Statements outside an explicit transaction: committed data only, no write lock. */
  read<T>(body: (conn: SqlConnection) => MaybePromise<T>, options?: SignalOption): Promise<T>;
  /**
   * Optional: like `read`, with every statement of `body` in one read transaction (one snapshot,
   * taken after `body` was asked for), where that costs less than reading each alone: on SQLite,
   * each statement outside a transaction takes and drops the WAL's read lock with two system calls.
   * A store reads the lock-free lookups of one turn with it (LookupBatcher). MUST see every commit
   * that completed before it was called, take no write lock, and end the transaction before it
   * settles; `body` is synchronous on a synchronous driver.
   */
  readTogether?<T>(body: (conn: SqlConnection) => MaybePromise<T>): Promise<T>;
  /**
   * One write transaction (see ReceiptStore.transaction for what it promises). `body` gets the
   * connection for Idem's statements and the application's handle to the same transaction; it is
   * synchronous when `capabilities.synchronous`. MAY run `body` again after a serialization
   * failure or deadlock.
   */
  transaction<T>(
    body: (conn: SqlConnection, tx: Tx, contended: boolean) => MaybePromise<T>,
    options?: SqlTransactionOptions,
  ): Promise<T>;
  close(): Promise<void>;
}
