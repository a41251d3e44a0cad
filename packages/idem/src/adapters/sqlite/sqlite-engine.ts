import { systemClock } from '../../core/clock.js';
import { IdemError } from '../../core/errors.js';
import { CommitConcurrency } from '../../core/commit-concurrency.js';
import type { StoreCapabilities } from '../../ports/idem-store.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';
import type { SqlConnection, SqlDriver, SqlTransactionOptions, SweepPacing } from '../sql/sql-driver.js';
import { startBackgroundCheckpoints, type BackgroundCheckpoints } from './background-checkpoints.js';
import { SqliteConnection } from './sqlite-connection.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';
import { sqliteDialect } from './sqlite-dialect.js';
import { DEFAULT_SQLITE_LOCK_TIMEOUT_MS } from './lock-wait.js';
import { migrateSqliteWaiting } from './sqlite-schema.js';
import type { SqliteStoreOptions } from './sqlite-store-options.js';
import { SqliteTransactor, type TransactorOptions } from './sqlite-transactor.js';

/** Default bound of one group-commit batch. */
export const DEFAULT_GROUP_COMMIT_BATCH = 64;

/** What the SQLite store declares: one synchronous writer per file, shared by processes. */
export const SQLITE_CAPABILITIES: StoreCapabilities = {
  engine: 'sqlite',
  synchronous: true,
  optimisticInsert: false,
  multiProcess: true,
  durable: true,
};

/**
 * What SqliteStore runs on: one better-sqlite3 connection, its write queue with group commit
 * (SqliteTransactor), and the checkpoint policy that keeps COMMITs short (a background
 * checkpointer while callers are concurrent or a sweep runs long). `driver()` is the SqlDriver
 * the shared SQL store uses: SQL and driver errors only.
 */
export class SqliteEngine {
  readonly #db: SqliteDatabase;
  readonly #tx: SqliteTransactor;
  readonly #background: BackgroundCheckpoints | undefined;
  /** Set in 'adaptive' mode: whether callers are concurrent enough for background checkpoints. */
  readonly #concurrency: CommitConcurrency | undefined;
  /** Long sweeps running now; while any does, the worker checkpoints whatever the callers do. */
  #sweeping = 0;
  /** Callers' (durable) writes queued or committing now: a sweep keeps its batches short while any are. */
  #callersWriting = 0;
  /** BEGIN, COMMIT and ROLLBACK of the read transactions, prepared at the first one. */
  #readStatements: { begin: SqliteStatement; commit: SqliteStatement; rollback: SqliteStatement } | undefined;

  constructor(db: SqliteDatabase, options: SqliteStoreOptions = {}) {
    this.#db = db;
    const clock = options.clock ?? systemClock;
    const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_SQLITE_LOCK_TIMEOUT_MS;
    const checkpoint = options.checkpoint ?? defaultCheckpointMode(db);
    this.#concurrency = checkpoint === 'adaptive' ? new CommitConcurrency() : undefined;
    this.#tx = new SqliteTransactor(db, clock, lockTimeoutMs, {
      ...groupCommitSettings(db, options.groupCommit),
      onCommit: (writes) => {
        if (this.#concurrency?.record(writes) === true && this.#sweeping === 0)
          this.#background?.engage(this.#concurrency.concurrent);
      },
    });
    // Start-up only: several processes may migrate the same file at once.
    if (options.migrate ?? true) migrateSqliteWaiting(db, lockTimeoutMs, clock);
    this.#background =
      checkpoint === 'inline' ? undefined : startBackgroundCheckpoints(db, checkpoint === 'background');
  }

  /** At most how many queued writes one COMMIT carries (group commit); 1 when it is off. */
  get maxCommitBatch(): number {
    return this.#tx.maxBatch;
  }

  /** When a group-commit batch starts: on the next event-loop turn, or adaptively. */
  get commitGather(): 'turn' | 'adaptive' {
    return this.#tx.gather;
  }

  async close(): Promise<void> {
    await this.#tx.drain();
    await this.#background?.stop();
    if (this.#db.open) this.#db.close();
  }

  /**
   * `body` in a deferred transaction that only reads (BEGIN DEFERRED ... COMMIT; rolled back when
   * it or the COMMIT throws): its statements share one snapshot and one read lock. Runs
   * synchronously, between write transactions (each of which also runs within one tick); inside a
   * transaction already open, just `body`.
   */
  #readTransaction<T>(body: () => MaybePromise<T>): T {
    const db = this.#db;
    if (db.inTransaction) return settledNow(body());
    const statements = (this.#readStatements ??= {
      begin: db.prepare('BEGIN DEFERRED'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
    });
    statements.begin.run();
    try {
      const result = settledNow(body());
      statements.commit.run();
      return result;
    } finally {
      // Never left open: the next write's BEGIN IMMEDIATE would fail on this connection.
      if (db.inTransaction) statements.rollback.run();
    }
  }

  /** SQL and driver errors only: the connection, the transactor, and the sweep's pacing. */
  driver(): SqlDriver<SqliteDatabase> {
    const db = this.#db;
    const tx = this.#tx;
    const conn: SqlConnection = new SqliteConnection(db);
    const pacing: SweepPacing = {
      blocksWriters: true,
      longSweep: () => {
        // A long sweep fills the WAL much faster than callers do: checkpoint it in the background.
        if (this.#background === undefined) {
          const helper = startBackgroundCheckpoints(db, true);
          return async () => helper?.stop();
        }
        if (this.#concurrency === undefined) return async () => undefined;
        // 'adaptive': the worker is there; the sweep hands it the checkpoints until it ends.
        this.#sweeping += 1;
        this.#background.engage(true);
        return async () => {
          this.#sweeping -= 1;
          if (this.#sweeping === 0) this.#background?.engage(this.#concurrency?.concurrent === true);
        };
      },
      callersWaiting: () => this.#callersWriting,
    };
    return {
      dialect: sqliteDialect,
      capabilities: SQLITE_CAPABILITIES,
      sweepPacing: pacing,
      async read<T>(body: (conn: SqlConnection) => MaybePromise<T>, options: SignalOption = {}): Promise<T> {
        options.signal?.throwIfAborted();
        return tx.read(() => body(conn));
      },
      // The lookups of one turn in one read transaction: the WAL's read lock taken and dropped once
      // for all of them, not once each (two fcntl calls, about as long as the lookup's statement).
      readTogether: async <T>(body: (conn: SqlConnection) => MaybePromise<T>): Promise<T> =>
        tx.read(() => this.#readTransaction(() => body(conn))),
      transaction: <T>(
        body: (conn: SqlConnection, handle: SqliteDatabase, contended: boolean) => MaybePromise<T>,
        options: SqlTransactionOptions = {},
      ): Promise<T> => {
        const written = tx.write(() => body(conn, db, false) as T, {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          ...(options.durable === undefined ? {} : { durable: options.durable }),
        });
        if (options.durable === false) return written;
        this.#callersWriting += 1;
        const settled = () => {
          this.#callersWriting -= 1;
        };
        written.then(settled, settled);
        return written;
      },
      close: () => this.close(),
    };
  }
}

/** A read's answer, now: a promise is refused (its statements would run after the read's COMMIT). */
function settledNow<T>(value: MaybePromise<T>): T {
  if (value instanceof Promise) {
    value.catch(() => undefined);
    throw new IdemError(
      'internal',
      'a read on SQLite must be synchronous: it runs inside a read transaction',
    );
  }
  return value;
}

/** How many writes one COMMIT may carry (1: no group commit), and when a batch starts. */
function groupCommitSettings(
  db: SqliteDatabase,
  option: SqliteStoreOptions['groupCommit'],
): TransactorOptions {
  if (option === false) return { maxBatch: 1 };
  if (option === true) return { maxBatch: DEFAULT_GROUP_COMMIT_BATCH, gather: 'turn' };
  if (typeof option === 'object') {
    return {
      maxBatch: Math.max(1, Math.floor(option.maxBatch ?? DEFAULT_GROUP_COMMIT_BATCH)),
      gather: option.gather ?? 'turn',
    };
  }
  // Default: wait a turn for companions only when a COMMIT waits for the disk.
  return {
    maxBatch: DEFAULT_GROUP_COMMIT_BATCH,
    gather: commitWaitsForDisk(db) ? 'turn' : 'adaptive',
  };
}

/** Checkpoints in the background where a COMMIT does not wait for the disk (see the option). */
function defaultCheckpointMode(db: SqliteDatabase): 'background' | 'adaptive' {
  return commitWaitsForDisk(db) ? 'adaptive' : 'background';
}

/** Whether each COMMIT fsyncs: synchronous=FULL or EXTRA, or NORMAL with a rollback journal. */
function commitWaitsForDisk(db: SqliteDatabase): boolean {
  const synchronous = Number(db.pragma('synchronous', { simple: true }));
  const journal = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
  return synchronous >= 2 || (synchronous === 1 && journal !== 'wal');
}
