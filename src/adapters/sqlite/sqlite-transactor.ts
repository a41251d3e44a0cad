import type { Clock } from '../../core/clock.js';
import { IdemError } from '../../core/errors.js';
import type { FaultPoints } from '../../core/fault-points.js';
import type { SignalOption } from '../../store/store.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { isSqliteBusy, translateSqliteError } from './sqlite-errors.js';

/**
 * Runs write transactions on one better-sqlite3 connection. Each transaction body is synchronous
 * (BEGIN IMMEDIATE ... COMMIT in one tick), so nothing else can use the connection in between. Only
 * the wait for the write lock is asynchronous, and writers wait in a FIFO queue: concurrent callers
 * are queued, never mixed. The driver's own busy wait is off so it never blocks the event loop.
 */
export class SqliteTransactor {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #lockTimeoutMs: number;
  readonly #faults: FaultPoints;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(db: SqliteDatabase, clock: Clock, lockTimeoutMs: number, faults: FaultPoints) {
    this.#db = db;
    this.#clock = clock;
    this.#lockTimeoutMs = lockTimeoutMs;
    this.#faults = faults;
    db.pragma('busy_timeout = 0');
  }

  /** A synchronous read of committed data; translates driver errors. */
  read<T>(body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw translateSqliteError(error, 50);
    }
  }

  /**
   * Queues `body` to run inside BEGIN IMMEDIATE ... COMMIT once the write lock is free; `busy` after
   * the lock timeout. With `commitFaults`, hits `before_commit` and `after_commit` around COMMIT.
   */
  write<T>(body: () => T, options: SignalOption & { commitFaults?: boolean } = {}): Promise<T> {
    const run = this.#queue.then(() => this.#acquireAndRun(body, options));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async drain(): Promise<void> {
    await this.#queue.catch(() => undefined);
  }

  async #acquireAndRun<T>(body: () => T, options: SignalOption & { commitFaults?: boolean }): Promise<T> {
    const started = this.#clock.monotonic();
    let pause = 1;
    for (;;) {
      options.signal?.throwIfAborted();
      const outcome = this.#tryTransaction(body, options.commitFaults ?? false);
      if (outcome.ok) {
        if (options.commitFaults) this.#afterCommit();
        return outcome.value;
      }
      const remaining = this.#lockTimeoutMs - (this.#clock.monotonic() - started);
      if (remaining <= 0) {
        throw new IdemError(
          'busy',
          `the write lock was not obtained within ${this.#lockTimeoutMs} ms; nothing was changed`,
          { retryAfterMs: Math.max(50, Math.min(1000, Math.round(this.#lockTimeoutMs / 4))) },
        );
      }
      await this.#clock.sleep(Math.min(pause, remaining), options);
      pause = Math.min(pause * 2, 25);
    }
  }

  /** Whatever fails after COMMIT must not be reported as a rollback: the data is there. */
  #afterCommit(): void {
    try {
      this.#faults.hit('after_commit');
    } catch (cause) {
      throw new IdemError('outcome_unknown', 'the transaction committed but the call did not complete', {
        cause,
        retryable: true,
        nextAction: 'Retry with the same idempotency_key and arguments to get the recorded result.',
      });
    }
  }

  /** Runs one transaction synchronously; returns `ok: false` only when the write lock was taken. */
  #tryTransaction<T>(body: () => T, commitFaults: boolean): { ok: true; value: T } | { ok: false } {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      if (isSqliteBusy(error)) return { ok: false };
      throw translateSqliteError(error, 50);
    }
    try {
      const value = body();
      if (commitFaults) this.#faults.hit('before_commit');
      this.#db.exec('COMMIT');
      return { ok: true, value };
    } catch (error) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      throw translateSqliteError(error, 50);
    }
  }
}
