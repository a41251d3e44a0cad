import { systemClock } from '../../core/clock.js';
import { LONG_SWEEP_BATCHES } from '../sql/sql-housekeeping.js';
import { SqlStore } from '../sql/sql-store.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { SqliteEngine } from './sqlite-engine.js';
import type { SqliteStoreOptions } from './sqlite-store-options.js';

export { BACKGROUND_CHECKPOINT_FRAMES, BACKSTOP_AUTOCHECKPOINT } from './background-checkpoints.js';
export { DEFAULT_GROUP_COMMIT_BATCH, SQLITE_CAPABILITIES } from './sqlite-engine.js';

export type { SqliteStoreOptions } from './sqlite-store-options.js';

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
