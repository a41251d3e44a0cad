import type { Clock } from '../../core/clock.js';

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
