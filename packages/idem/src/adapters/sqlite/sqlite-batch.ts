import { IdemError } from '../../core/errors.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';
import { isSqliteBusy, isSqliteError } from './sqlite-errors.js';

export interface PendingWrite {
  readonly body: () => unknown;
  readonly durable: boolean;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** Monotonic ms of the first attempt to take the write lock for this write. */
  waitingSince?: number;
}

export type Settlement =
  { write: PendingWrite; ok: true; value: unknown } | { write: PendingWrite; ok: false; error: unknown };

const SAVEPOINT = 'idem_call';

/**
 * Runs one group-commit batch synchronously: BEGIN IMMEDIATE, each write (in its own SAVEPOINT
 * when there are several: a write that throws rolls back to it and fails alone), one COMMIT; then
 * settles every write, none before that COMMIT returned. Writes after one that made SQLite roll the
 * whole transaction back go back to the head of the queue (`requeue`).
 */
export class SqliteBatchRunner {
  readonly #db: SqliteDatabase;
  readonly #translate: (error: unknown) => IdemError;
  readonly #requeue: (...writes: PendingWrite[]) => void;
  readonly #stmt: Record<
    'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo',
    SqliteStatement
  >;

  constructor(
    db: SqliteDatabase,
    translate: (error: unknown) => IdemError,
    requeue: (...writes: PendingWrite[]) => void,
  ) {
    this.#db = db;
    this.#translate = translate;
    this.#requeue = requeue;
    this.#stmt = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare(`SAVEPOINT ${SAVEPOINT}`),
      release: db.prepare(`RELEASE ${SAVEPOINT}`),
      rollbackTo: db.prepare(`ROLLBACK TO ${SAVEPOINT}`),
    };
  }

  /** False, having changed nothing, only when the write lock is held elsewhere. */
  run(batch: PendingWrite[]): boolean {
    try {
      this.#stmt.begin.run();
    } catch (error) {
      if (isSqliteBusy(error)) return false;
      const translated = this.#translate(error);
      for (const write of batch) write.reject(translated);
      return true;
    }
    const isolated = batch.length > 1;
    const settled: Settlement[] = [];
    let index = 0;
    for (; index < batch.length; index += 1) {
      const write = batch[index] as PendingWrite;
      if (isolated) this.#stmt.savepoint.run();
      try {
        const value = write.body();
        if (isolated) this.#stmt.release.run();
        settled.push({ write, ok: true, value });
      } catch (error) {
        const failure = this.#translate(error);
        // What the body threw of its own (an effect's error, an abort) comes out unchanged.
        const own = isSqliteError(error) ? failure : error;
        if (!this.#db.inTransaction) {
          // SQLite rolled the whole transaction back (full disk, I/O error, out of memory, ...): the
          // writes before this one went with it, for the same reason when the storage failed, and
          // those after it go back to the head of the queue.
          const lost =
            failure.code === 'unavailable'
              ? failure
              : new IdemError('internal', 'database error; the transaction was rolled back', {
                  cause: error,
                });
          const failed: Settlement[] = settled.map((s) =>
            s.ok ? { write: s.write, ok: false, error: lost } : s,
          );
          failed.push({ write, ok: false, error: own });
          this.#requeue(...batch.slice(index + 1));
          settle(failed);
          return true;
        }
        if (isolated) {
          try {
            this.#stmt.rollbackTo.run();
            this.#stmt.release.run();
          } catch (rollbackError) {
            this.#abandon(batch, settled, index, rollbackError);
            return true;
          }
        }
        settled.push({ write, ok: false, error: own });
      }
    }
    if (!isolated && settled[0]?.ok === false) {
      // A lone write that failed: nothing to commit.
      this.#rollbackQuietly();
      settle(settled);
      return true;
    }
    try {
      this.#stmt.commit.run();
    } catch (error) {
      this.#rollbackQuietly();
      const translated = this.#translate(error);
      settle(settled.map((s) => ({ write: s.write, ok: false, error: s.ok ? translated : s.error })));
      return true;
    }
    // Committed and durable: only now may any caller see a result.
    settle(settled);
    return true;
  }

  /** A rollback to a savepoint failed: give up the whole transaction, nothing of it is committed. */
  #abandon(batch: PendingWrite[], settled: Settlement[], index: number, cause: unknown): void {
    this.#rollbackQuietly();
    const failure = this.#translate(cause);
    const failed: Settlement[] = settled.map((s) => ({
      write: s.write,
      ok: false,
      error: s.ok ? failure : s.error,
    }));
    failed.push({ write: batch[index] as PendingWrite, ok: false, error: failure });
    this.#requeue(...batch.slice(index + 1));
    settle(failed);
  }

  #rollbackQuietly(): void {
    if (!this.#db.inTransaction) return;
    try {
      this.#stmt.rollback.run();
    } catch {
      // The connection is unusable; the next BEGIN reports it.
    }
  }
}

function settle(settlements: readonly Settlement[]): void {
  for (const s of settlements) {
    if (s.ok) s.write.resolve(s.value);
    else s.write.reject(s.error);
  }
}
