import { systemClock, type Clock } from '../../core/clock.js';
import { CommitConcurrency } from '../../core/commit-concurrency.js';
import type { StoreCapabilities } from '../../ports/idem-store.js';
import type { IdemStore } from '../../ports/idem-store.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';
import type { SqlConnection, SqlDriver, SqlTransactionOptions, SweepPacing } from '../sql/sql-driver.js';
import { sqlStore } from '../sql/sql-store.js';
import { SqliteConnection } from './sqlite-connection.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { sqliteDialect } from './sqlite-dialect.js';
import { isSqliteBusy, translateSqliteError } from './sqlite-errors.js';
import { migrateSqlite } from './sqlite-schema.js';
import { SqliteTransactor, type TransactorOptions } from './sqlite-transactor.js';
import { WalCheckpointer } from './wal-checkpointer.js';

export interface SqliteStoreOptions {
  /** How long a write waits for the database's write lock before answering `busy`. Default 5000 ms. */
  lockTimeoutMs?: number;
  /** Apply migrations when the store is created. Default true. */
  migrate?: boolean;
  clock?: Clock;
  /**
   * Group commit: writes queued while a transaction runs (better-sqlite3 blocks the event loop for
   * each COMMIT's fsync) are committed together by one COMMIT, each in its own SAVEPOINT so that a
   * failing call rolls back only itself; no call is answered before that COMMIT. `true` uses
   * batches of at most 64 writes that start on the next turn of the event loop (so that every
   * caller ready in this turn joins); `{ maxBatch, gather }` sets the bound and when a batch starts
   * (`'turn'`, or `'adaptive'`: at once unless callers overlap); `false` commits every write alone.
   * Default: `'turn'` where a COMMIT waits for the disk (synchronous=FULL or EXTRA, or a rollback
   * journal); `'adaptive'` for WAL at synchronous=NORMAL or OFF, where a COMMIT is cheap and a lone
   * caller should not wait for companions.
   */
  groupCommit?: boolean | { maxBatch?: number; gather?: 'turn' | 'adaptive' };
  /**
   * Where WAL checkpoints run. `'background'`: a worker thread with its own connection
   * (WalCheckpointer) copies the WAL into the database file once `BACKGROUND_CHECKPOINT_FRAMES`
   * frames wait, so no COMMIT pays for a checkpoint on the event-loop thread; the connection's own
   * automatic checkpoint is raised to `BACKSTOP_AUTOCHECKPOINT` pages as a safety net (unless it was
   * off), and set back if the worker stops. `'inline'`: SQLite's automatic checkpoint, run by the
   * COMMIT that crosses 1,000 WAL pages, except while a sweep longer than `SWEEP_CHECKPOINTER_AFTER`
   * batches runs: it fills the WAL much faster than callers do, so it checkpoints in the background
   * for its own duration. `'adaptive'`: inline while callers commit one at a time, background while
   * group-commit batches carry several writes (CommitConcurrency), and during a long sweep.
   * Default: `'adaptive'` where a COMMIT waits for the disk (synchronous=FULL or EXTRA): a lone
   * caller's fsync would then share the disk with the worker's, while concurrent callers would
   * all wait for an inline checkpoint; `'background'` in WAL mode at synchronous=NORMAL or OFF.
   */
  checkpoint?: 'background' | 'inline' | 'adaptive';
}

/**
 * WAL frames the background checkpointer lets wait before it copies them (16 MiB of 4 KiB pages):
 * few fsyncs of the database file, and a page that many commits rewrote is copied once.
 */
export const BACKGROUND_CHECKPOINT_FRAMES = 4000;

/** The connection's own automatic checkpoint while the background checkpointer runs. */
export const BACKSTOP_AUTOCHECKPOINT = 16_000;

/** A sweep that has run this many batches checkpoints from a worker thread until it ends. */
export const SWEEP_CHECKPOINTER_AFTER = 8;

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
 * The SQLite store: the shared SQL store (src/adapters/sql) on one better-sqlite3 connection.
 * better-sqlite3 is synchronous, so each transaction (BEGIN IMMEDIATE, lookup, effect, record,
 * COMMIT) runs in one tick, with group commit (SqliteTransactor); an effect receives the
 * application's own `Database` and must be synchronous. Reads (replays, status) use the same
 * connection outside any transaction and see committed data only, without the write lock.
 * Checkpoint policy lives here too: it is how this engine keeps COMMITs short.
 */
export class SqliteStore implements IdemStore<SqliteDatabase> {
  readonly capabilities = SQLITE_CAPABILITIES;
  readonly receipts: IdemStore<SqliteDatabase>['receipts'];
  readonly ledger: IdemStore<SqliteDatabase>['ledger'];
  readonly outbox: IdemStore<SqliteDatabase>['outbox'];
  readonly housekeeping: IdemStore<SqliteDatabase>['housekeeping'];
  readonly #db: SqliteDatabase;
  readonly #tx: SqliteTransactor;
  readonly #background: BackgroundCheckpoints | undefined;
  /** Set in 'adaptive' mode: whether callers are concurrent enough for background checkpoints. */
  readonly #concurrency: CommitConcurrency | undefined;
  /** Long sweeps running now; while any does, the worker checkpoints whatever the callers do. */
  #sweeping = 0;

  constructor(db: SqliteDatabase, options: SqliteStoreOptions = {}) {
    this.#db = db;
    const clock = options.clock ?? systemClock;
    const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    const checkpoint = options.checkpoint ?? defaultCheckpointMode(db);
    this.#concurrency = checkpoint === 'adaptive' ? new CommitConcurrency() : undefined;
    this.#tx = new SqliteTransactor(db, clock, lockTimeoutMs, {
      ...groupCommitSettings(db, options.groupCommit),
      onCommit: (writes) => {
        if (this.#concurrency?.record(writes) === true && this.#sweeping === 0)
          this.#background?.engage(this.#concurrency.concurrent);
      },
    });
    if (options.migrate ?? true) withLockRetrySync(clock, lockTimeoutMs, db.name, () => migrateSqlite(db));
    this.#background =
      checkpoint === 'inline' ? undefined : startBackgroundCheckpoints(db, checkpoint === 'background');
    const store = sqlStore(this.#driver(), { clock });
    this.receipts = store.receipts;
    this.ledger = store.ledger;
    this.outbox = store.outbox;
    this.housekeeping = store.housekeeping;
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

  /** SQL and driver errors only: the connection, the transactor, and the sweep's pacing. */
  #driver(): SqlDriver<SqliteDatabase> {
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
    };
    return {
      dialect: sqliteDialect,
      capabilities: SQLITE_CAPABILITIES,
      sweepPacing: pacing,
      async read<T>(body: (conn: SqlConnection) => MaybePromise<T>, options: SignalOption = {}): Promise<T> {
        options.signal?.throwIfAborted();
        return tx.read(() => body(conn));
      },
      transaction<T>(
        body: (conn: SqlConnection, handle: SqliteDatabase, contended: boolean) => MaybePromise<T>,
        options: SqlTransactionOptions = {},
      ): Promise<T> {
        return tx.write(() => body(conn, db, false) as T, {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          ...(options.durable === undefined ? {} : { durable: options.durable }),
        });
      },
      close: () => this.close(),
    };
  }
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

interface BackgroundCheckpoints {
  /**
   * `true`: the worker does the checkpoints (the connection's own threshold raised above the
   * worker's); `false`: the connection's own automatic checkpoint does them again, at its own
   * threshold, before the WAL is long enough for the worker. No effect once the worker is gone.
   */
  engage(on: boolean): void;
  /** Stops the worker after a last checkpoint and gives the connection its own threshold back. */
  stop(): Promise<void>;
}

/**
 * A worker that checkpoints once `BACKGROUND_CHECKPOINT_FRAMES` frames wait; while `engaged`, the
 * connection's automatic checkpoint is raised above that (unless it was off) until the worker
 * stops, on request or not. None for a database that has no file, is read-only or is not in WAL
 * mode, or when no thread can be started: SQLite's automatic checkpoint then does the work.
 */
function startBackgroundCheckpoints(db: SqliteDatabase, engaged: boolean): BackgroundCheckpoints | undefined {
  const path = db.name;
  if (path === undefined || path === '' || path === ':memory:' || db.readonly === true) return undefined;
  if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return undefined;
  let worker: WalCheckpointer;
  try {
    worker = WalCheckpointer.start(path, { minFrames: BACKGROUND_CHECKPOINT_FRAMES });
  } catch {
    return undefined;
  }
  const own = Number(db.pragma('wal_autocheckpoint', { simple: true }));
  let alive = true;
  let raised = false;
  const engage = (on: boolean): void => {
    if (own <= 0 || !db.open || on === raised || (on && !alive)) return;
    db.pragma(`wal_autocheckpoint = ${on ? Math.max(own, BACKSTOP_AUTOCHECKPOINT) : own}`);
    raised = on;
  };
  engage(engaged);
  // A worker that dies must not leave the connection with a WAL 16 times longer than usual.
  worker.onExit(() => {
    engage(false);
    alive = false;
  });
  return {
    engage,
    stop: async () => {
      await worker.stop();
      engage(false);
      alive = false;
    },
  };
}

function withLockRetrySync<T>(
  clock: Clock,
  lockTimeoutMs: number,
  path: string | undefined,
  body: () => T,
): T {
  // Start-up only: several processes may migrate the same file at once.
  const deadline = clock.monotonic() + lockTimeoutMs;
  for (;;) {
    try {
      return body();
    } catch (error) {
      if (!isSqliteBusy(error) || clock.monotonic() > deadline) throw translateSqliteError(error, 50, path);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}
