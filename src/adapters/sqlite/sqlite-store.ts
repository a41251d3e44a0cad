import { systemClock } from '../../core/clock.js';
import { LONG_SWEEP_BATCHES } from '../sql/sql-housekeeping.js';
import { SqlStore } from '../sql/sql-store.js';
import type { Clock } from '../../core/clock.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { SqliteEngine } from './sqlite-engine.js';

export { BACKGROUND_CHECKPOINT_FRAMES, BACKSTOP_AUTOCHECKPOINT } from './background-checkpoints.js';
export { DEFAULT_GROUP_COMMIT_BATCH, SQLITE_CAPABILITIES } from './sqlite-engine.js';

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

/** A sweep that has run this many batches checkpoints from a worker thread until it ends. */
export const SWEEP_CHECKPOINTER_AFTER = LONG_SWEEP_BATCHES;

/**
 * The SQLite store: the shared SQL store (src/adapters/sql) on one better-sqlite3 connection
 * (SqliteEngine). better-sqlite3 is synchronous, so each transaction (BEGIN IMMEDIATE, lookup,
 * effect, record, COMMIT) runs in one tick, with group commit; an effect receives the
 * application's own `Database` and must be synchronous. Reads (replays, status) use the same
 * connection outside any transaction and see committed data only, without the write lock.
 */
export class SqliteStore extends SqlStore<SqliteDatabase> {
  readonly #engine: SqliteEngine;

  constructor(db: SqliteDatabase, options: SqliteStoreOptions = {}) {
    const engine = new SqliteEngine(db, options);
    super(engine.driver(), { clock: options.clock ?? systemClock });
    this.#engine = engine;
  }

  /** At most how many queued writes one COMMIT carries (group commit); 1 when it is off. */
  get maxCommitBatch(): number {
    return this.#engine.maxCommitBatch;
  }

  /** When a group-commit batch starts: on the next event-loop turn, or adaptively. */
  get commitGather(): 'turn' | 'adaptive' {
    return this.#engine.commitGather;
  }
}
