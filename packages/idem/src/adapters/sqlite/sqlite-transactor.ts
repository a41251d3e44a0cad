import type { Clock } from '../../core/clock.js';
import type { IdemError } from '../../core/errors.js';
import { timeoutSignal } from '../../core/timeout-signal.js';
import type { SignalOption } from '../../ports/maybe-async.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { SqliteBatchRunner, type PendingWrite } from './sqlite-batch.js';
import { translateSqliteError } from './sqlite-errors.js';
import { lockPauseMs, SQLITE_BUSY_RETRY_MS, writeLockTimeout } from './lock-wait.js';

export interface WriteOptions extends SignalOption {
  /**
   * `false`: housekeeping whose loss in a power failure only means doing it again (the sweep). A
   * batch made only of such writes commits at synchronous=NORMAL in WAL mode: no fsync of its own,
   * so it does not compete with callers' commits for the disk. It still survives a process crash,
   * and the next durable COMMIT's fsync covers it. Default `true`.
   */
  durable?: boolean;
}

export interface TransactorOptions {
  /**
   * Most writes committed together in one transaction (group commit). 1 turns group commit off:
   * every write gets its own BEGIN IMMEDIATE ... COMMIT.
   */
  maxBatch: number;
  /**
   * When a batch starts. `turn` (default): on the next turn of the event loop (setImmediate), so
   * that every caller that is ready in this turn joins; worth its few microseconds when a COMMIT
   * waits for an fsync. `adaptive`: at once (a microtask) unless the previous batch carried several
   * writes or several are queued already: a lone caller waits for nobody, concurrent callers still
   * share commits.
   */
  gather?: 'turn' | 'adaptive';
  /**
   * Told, once a batch of durable writes has settled, how many writes it carried (failed ones
   * included): how concurrent the callers are.
   */
  onCommit?: (writes: number) => void;
}

/**
 * Runs write transactions on one better-sqlite3 connection, with group commit.
 *
 * Each transaction (BEGIN IMMEDIATE ... COMMIT) runs synchronously in one tick, so nothing else can
 * use the connection in between. Only the wait for the write lock is asynchronous; writers wait in a
 * FIFO queue and are never mixed. The driver's own busy wait is off so it never blocks the event loop.
 *
 * Group commit (`maxBatch > 1`): better-sqlite3 is synchronous, so an fsync blocks the event loop and
 * the writes that callers issue meanwhile pile up in the queue. When the queue is served, every
 * queued write (up to `maxBatch`) runs in ONE transaction, each inside its own SAVEPOINT: a write
 * that throws is rolled back to its savepoint (only its own changes go) and fails alone; the others
 * are RELEASEd and committed together by a single COMMIT, so one fsync serves the whole batch. No
 * write's promise settles before that COMMIT returned: a caller never sees a result that is not
 * durable. To let concurrent callers join, a batch starts on the next turn of the event loop
 * (setImmediate) rather than in a microtask.
 */
export class SqliteTransactor {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #lockTimeoutMs: number;
  readonly #maxBatch: number;
  readonly #gather: 'turn' | 'adaptive';
  readonly #onCommit: ((writes: number) => void) | undefined;
  /** The database file, named in `unavailable` errors. */
  readonly #path: string | undefined;
  #lastBatchSize = 0;
  readonly #batches: SqliteBatchRunner;
  #pending: PendingWrite[] = [];
  #serving = false;
  #idle: (() => void)[] = [];

  constructor(
    db: SqliteDatabase,
    clock: Clock,
    lockTimeoutMs: number,
    options: TransactorOptions = { maxBatch: 1 },
  ) {
    this.#db = db;
    this.#clock = clock;
    this.#lockTimeoutMs = lockTimeoutMs;
    this.#maxBatch = Math.max(1, Math.floor(options.maxBatch));
    this.#gather = options.gather ?? 'turn';
    this.#onCommit = options.onCommit;
    this.#path = db.name;
    db.pragma('busy_timeout = 0');
    this.#batches = new SqliteBatchRunner(
      db,
      (error) => this.#translate(error),
      (...writes) => this.#pending.unshift(...writes),
    );
  }

  /** Most writes committed by one COMMIT; 1 when group commit is off. */
  get maxBatch(): number {
    return this.#maxBatch;
  }

  /** When a batch starts (see TransactorOptions.gather). */
  get gather(): 'turn' | 'adaptive' {
    return this.#gather;
  }

  /** A synchronous read of committed data; translates driver errors. */
  read<T>(body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw this.#translate(error);
    }
  }

  /**
   * Queues `body` to run inside BEGIN IMMEDIATE ... COMMIT once the write lock is free (possibly
   * together with other queued writes, each in its own savepoint); `busy` after the lock timeout.
   * Settles only after the COMMIT that made the write durable (or after its rollback).
   */
  write<T>(body: () => T, options: WriteOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (options.signal?.aborted) {
        reject(options.signal.reason);
        return;
      }
      this.#pending.push({
        body,
        durable: options.durable ?? true,
        signal: options.signal,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#serve();
    });
  }

  /** Resolves once every queued write has settled. */
  drain(): Promise<void> {
    if (!this.#serving && this.#pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #serve(): void {
    if (this.#serving) return;
    this.#serving = true;
    void this.#loop();
  }

  async #loop(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        // Group commit: let the callers that are ready this turn queue their writes first.
        const wait =
          this.#maxBatch > 1 &&
          (this.#gather === 'turn' || this.#lastBatchSize > 1 || this.#pending.length > 1);
        if (wait) await new Promise((resolve) => setImmediate(resolve));
        else await Promise.resolve();
        await this.#serveBatch();
      }
    } finally {
      this.#serving = false;
      const idle = this.#idle;
      this.#idle = [];
      for (const resolve of idle) resolve();
      // A write queued while the last batch settled (a synchronous caller) starts a new loop.
      if (this.#pending.length > 0) this.#serve();
    }
  }

  /** Takes up to maxBatch queued writes and commits them together, waiting for the lock if needed. */
  async #serveBatch(): Promise<void> {
    const batch: PendingWrite[] = [];
    for (let attempt = 0; ; attempt += 1) {
      const now = this.#clock.monotonic();
      // Writes queued while the batch waited for the lock join it, in order and of one kind: a
      // caller's write never waits for the fsync of a sweep's pages, nor relaxes it.
      while (
        batch.length < this.#maxBatch &&
        this.#pending.length > 0 &&
        (batch.length === 0 || (this.#pending[0] as PendingWrite).durable === batch[0]?.durable)
      ) {
        const write = this.#pending.shift() as PendingWrite;
        write.waitingSince = now;
        batch.push(write);
      }
      dropAborted(batch);
      if (batch.length === 0) return;

      const size = batch.length;
      if (this.#tryBatch(batch)) {
        this.#lastBatchSize = size;
        if (batch[0]?.durable === true) this.#onCommit?.(size);
        return;
      }

      // The write lock is held by another connection: time out the writes that waited long enough.
      const after = this.#clock.monotonic();
      let remaining = Number.POSITIVE_INFINITY;
      for (let i = batch.length - 1; i >= 0; i -= 1) {
        const write = batch[i] as PendingWrite;
        const left = this.#lockTimeoutMs - (after - (write.waitingSince ?? after));
        if (left <= 0) {
          batch.splice(i, 1);
          write.reject(writeLockTimeout(this.#lockTimeoutMs));
        } else {
          remaining = Math.min(remaining, left);
        }
      }
      if (batch.length === 0) return;
      // Wakes early when any waiting write is aborted (no timeout of its own: the pause is the bound).
      const woken = timeoutSignal(Number.POSITIVE_INFINITY, { signal: batch.map((write) => write.signal) });
      try {
        await this.#clock.sleep(Math.min(lockPauseMs(attempt), remaining), { signal: woken.signal });
      } catch {
        // Aborted: the aborted writes are dropped at the top of the loop, the others go on waiting.
      } finally {
        woken.dispose();
      }
    }
  }

  /**
   * Runs one batch synchronously: BEGIN IMMEDIATE, each write (in its own savepoint when there are
   * several), COMMIT; then settles every write. Returns false, having changed nothing, only when
   * the write lock is held elsewhere.
   */
  #tryBatch(batch: PendingWrite[]): boolean {
    const relax = this.#relaxedSync(batch);
    try {
      return this.#batches.run(batch);
    } finally {
      if (relax !== undefined) this.#db.pragma(`synchronous = ${relax}`);
    }
  }

  /**
   * For a batch of non-durable writes only, on a WAL connection that fsyncs every COMMIT: lowers
   * synchronous to NORMAL for this batch and returns the level to restore afterwards.
   */
  #relaxedSync(batch: readonly PendingWrite[]): number | undefined {
    if (batch.some((write) => write.durable)) return undefined;
    if (String(this.#db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return undefined;
    const level = Number(this.#db.pragma('synchronous', { simple: true }));
    if (level < 2) return undefined;
    this.#db.pragma('synchronous = NORMAL');
    return level;
  }

  #translate(error: unknown): IdemError {
    return translateSqliteError(error, SQLITE_BUSY_RETRY_MS, this.#path);
  }
}

function dropAborted(batch: PendingWrite[]): void {
  for (let i = batch.length - 1; i >= 0; i -= 1) {
    const write = batch[i] as PendingWrite;
    if (write.signal?.aborted) {
      batch.splice(i, 1);
      write.reject(write.signal.reason);
    }
  }
}
