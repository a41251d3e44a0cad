import { DEFAULT_SWEEP_MAX_DUTY, pauseAfterBatch, sweepBatchSizer } from '../../core/batch-sizer.js';
import { systemClock, type Clock } from '../../core/clock.js';
import { CommitConcurrency } from '../../core/commit-concurrency.js';
import { IdemError } from '../../core/errors.js';
import { FaultPoints } from '../../core/fault-points.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { AttemptRecord, OperationRecord, OutboxMessage } from '../../core/operation-record.js';
import {
  attemptChange,
  cancelChange,
  closedWithState,
  interruptedAttempt,
  resolutionChange,
  transitionChange,
  type RecordChange,
} from '../../core/operation-changes.js';
import { isActive } from '../../core/operation-state.js';
import type { Existing } from '../../core/receipt.js';
import type {
  AttemptEnd,
  AttemptStart,
  ClaimOptions,
  CommitOutcome,
  CommitUnit,
  DeadLetterListOptions,
  EffectContext,
  ListOptions,
  Resolution,
  SignalOption,
  Store,
  SweepOptions,
  SweepResult,
  TransitionRequest,
} from '../../store/store.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';
import { isSqliteBusy, translateSqliteError } from './sqlite-errors.js';
import {
  changeParams,
  identityParams,
  OPERATION_COLUMNS,
  operationParams,
  operationRowOf,
  toAttempt,
  toRecord,
  type AttemptRow,
  type OperationRow,
} from '../operation-rows.js';
import { SqliteOutbox } from './sqlite-outbox.js';
import { migrateSqlite } from './sqlite-schema.js';
import { SqliteTransactor, type TransactorOptions } from './sqlite-transactor.js';
import { WalCheckpointer } from './wal-checkpointer.js';

export interface SqliteStoreOptions {
  /** How long a write waits for the database's write lock before answering `busy`. Default 5000 ms. */
  lockTimeoutMs?: number;
  /** Apply migrations when the store is created. Default true. */
  migrate?: boolean;
  clock?: Clock;
  faults?: FaultPoints;
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

const IDENTITY_WHERE = 'principal = ? AND workspace = ? AND operation = ? AND version = ? AND idem_key = ?';
const ACTIVE = "('accepted', 'running', 'cancel_requested')";
const FINAL = "('succeeded', 'failed', 'cancelled')";

/**
 * The SQLite Store. better-sqlite3 is synchronous, so each transaction (BEGIN IMMEDIATE, lookup,
 * effect, record, COMMIT) runs in one tick; see SqliteTransactor. Reads (replays, status) use the
 * same connection outside any transaction and see committed data only, without the write lock.
 */
export class SqliteStore implements Store<SqliteDatabase> {
  readonly faults: FaultPoints;
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #tx: SqliteTransactor;
  readonly #sql: Record<string, SqliteStatement>;
  readonly #outbox: SqliteOutbox;
  readonly #background: BackgroundCheckpoints | undefined;
  /** Set in 'adaptive' mode: whether callers are concurrent enough for background checkpoints. */
  readonly #concurrency: CommitConcurrency | undefined;
  /** Long sweeps running now; while any does, the worker checkpoints whatever the callers do. */
  #sweeping = 0;

  constructor(db: SqliteDatabase, options: SqliteStoreOptions = {}) {
    this.#db = db;
    const clock = options.clock ?? systemClock;
    this.#clock = clock;
    this.faults = options.faults ?? new FaultPoints();
    const checkpoint = options.checkpoint ?? defaultCheckpointMode(db);
    this.#concurrency = checkpoint === 'adaptive' ? new CommitConcurrency() : undefined;
    this.#tx = new SqliteTransactor(db, clock, options.lockTimeoutMs ?? 5000, this.faults, {
      ...groupCommitSettings(db, options.groupCommit),
      onCommit: (writes) => {
        if (this.#concurrency?.record(writes) === true && this.#sweeping === 0)
          this.#background?.engage(this.#concurrency.concurrent);
      },
    });
    if (options.migrate ?? true)
      withLockRetrySync(clock, options.lockTimeoutMs ?? 5000, db.name, () => migrateSqlite(db));
    this.#background =
      checkpoint === 'inline' ? undefined : startBackgroundCheckpoints(db, checkpoint === 'background');
    this.#outbox = new SqliteOutbox(db, this.#tx, clock);
    // Only final records expire; an unfinished one keeps its promise however old it is.
    const expiredBatch = `SELECT rowid FROM idem_operations WHERE expires_at <= ? AND status IN ${FINAL}
      ORDER BY expires_at, rowid LIMIT ?`;
    const columns = OPERATION_COLUMNS.join(', ');
    const updates = OPERATION_COLUMNS.filter(
      (c) => !['principal', 'workspace', 'operation', 'version', 'idem_key'].includes(c),
    )
      .map((c) => `${c} = excluded.${c}`)
      .join(', ');
    this.#sql = {
      // One statement for both tables, read as arrays: in WAL mode each statement outside a
      // transaction takes and drops the file and WAL read locks (three syscalls), and
      // better-sqlite3 builds a row object property by property; both cost more than the reads.
      findIdentity: db
        .prepare(
          `SELECT ${columns}, NULL, NULL, NULL FROM idem_operations WHERE ${IDENTITY_WHERE}
           UNION ALL
           SELECT ${OPERATION_COLUMNS.map(() => 'NULL').join(', ')}, fingerprint, receipt_expired_at, expires_at
           FROM idem_tombstones WHERE ${IDENTITY_WHERE}
           LIMIT 1`,
        )
        .raw(true),
      upsertOperation: db.prepare(
        `INSERT INTO idem_operations (${columns}) VALUES (${OPERATION_COLUMNS.map(() => '?').join(', ')})
         ON CONFLICT (principal, workspace, operation, version, idem_key) DO UPDATE SET ${updates}`,
      ),
      deleteTombstone: db.prepare(`DELETE FROM idem_tombstones WHERE ${IDENTITY_WHERE}`),
      byOperationId: db.prepare('SELECT * FROM idem_operations WHERE operation_id = ?'),
      list: db.prepare('SELECT * FROM idem_operations ORDER BY rowid DESC LIMIT ?'),
      listByStatus: db.prepare('SELECT * FROM idem_operations WHERE status = ? ORDER BY rowid DESC LIMIT ?'),
      tombstoneBatch: db.prepare(
        `INSERT OR REPLACE INTO idem_tombstones
           (principal, workspace, operation, version, idem_key, fingerprint, receipt_expired_at, expires_at)
         SELECT principal, workspace, operation, version, idem_key, fingerprint, expires_at, expires_at + ?
         FROM idem_operations WHERE rowid IN (${expiredBatch})`,
      ),
      deleteAttemptsBatch: db.prepare(
        `DELETE FROM idem_attempts WHERE operation_id IN
           (SELECT operation_id FROM idem_operations WHERE rowid IN (${expiredBatch}))`,
      ),
      deleteExpiredBatch: db.prepare(`DELETE FROM idem_operations WHERE rowid IN (${expiredBatch})`),
      deleteTombstoneBatch: db.prepare(
        `DELETE FROM idem_tombstones WHERE rowid IN
           (SELECT rowid FROM idem_tombstones WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
      ),
      claimDue: db.prepare(
        `UPDATE idem_operations SET lease_owner = ?, lease_expires_at = ?
         WHERE rowid = (SELECT rowid FROM idem_operations
           WHERE status IN ${ACTIVE} AND kind = 'durable'
             AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
             AND (next_attempt_at IS NULL OR next_attempt_at <= ?)
           ORDER BY COALESCE(next_attempt_at, created_at), rowid LIMIT 1)
         RETURNING *`,
      ),
      renewLease: db.prepare(
        'UPDATE idem_operations SET lease_expires_at = ? WHERE operation_id = ? AND lease_owner = ? AND lease_expires_at > ?',
      ),
      patch: db.prepare(
        `UPDATE idem_operations SET status = ?, resource_id = ?, result_json = ?, error_json = ?, expires_at = ?,
           dispatched = ?, next_attempt_at = ?, lease_owner = ?, lease_expires_at = ?, updated_at = ?,
           attempt_count = ?, cancel_requested_at = ?, resolved_by = ?, resolved_at = ?, audit_json = ?
         WHERE operation_id = ? RETURNING *`,
      ),
      insertAttempt: db.prepare(
        `INSERT INTO idem_attempts (attempt_id, operation_id, number, worker_id, started_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      finishAttempt: db.prepare(
        'UPDATE idem_attempts SET ended_at = ?, outcome = ?, detail = ? WHERE attempt_id = ?',
      ),
      listAttempts: db.prepare('SELECT * FROM idem_attempts WHERE operation_id = ? ORDER BY number'),
      closeOpenAttempts: db.prepare(
        `UPDATE idem_attempts SET ended_at = ?, outcome = ?, detail = ?
         WHERE operation_id = ? AND ended_at IS NULL`,
      ),
    };
  }

  /** At most how many queued writes one COMMIT carries (group commit); 1 when it is off. */
  get maxCommitBatch(): number {
    return this.#tx.maxBatch;
  }

  /** When a group-commit batch starts: on the next event-loop turn, or adaptively. */
  get commitGather(): 'turn' | 'adaptive' {
    return this.#tx.gather;
  }

  async lookup(identity: OperationIdentity, options: SignalOption = {}): Promise<Existing | undefined> {
    options.signal?.throwIfAborted();
    return this.#tx.read(() => this.#find(identity));
  }

  async commit(unit: CommitUnit<SqliteDatabase>, options: SignalOption = {}): Promise<CommitOutcome> {
    return this.#tx.write(
      () => {
        const existing = this.#find(unit.identity);
        const decision = unit.decide(existing);
        if (decision.kind !== 'execute') return { kind: 'decided', decision } as const;
        this.faults.hit('after_claim');
        const context: EffectContext = { ...unit.context, enqueue: (intent) => this.#outbox.enqueue(intent) };
        const result = unit.effect?.(this.#db, context);
        if (isThenable(result)) {
          throw new IdemError(
            'internal',
            'a SQLite effect must be synchronous: it runs inside the transaction',
          );
        }
        this.faults.hit('after_effect');
        const record = unit.receipt(result);
        // A tombstone past its life must not outlive the new record (rare: only then a DELETE).
        if (existing?.kind === 'tombstone')
          this.#sql.deleteTombstone!.run(...identityParams(record.identity));
        this.#sql.upsertOperation!.run(...operationParams(record));
        return { kind: 'executed', receipt: record } as const;
      },
      { ...options, commitFaults: true },
    );
  }

  async getOperation(operationId: string, options: SignalOption = {}): Promise<OperationRecord | undefined> {
    options.signal?.throwIfAborted();
    return this.#tx.read(() => this.#byId(operationId));
  }

  async listOperations(options: ListOptions = {}): Promise<OperationRecord[]> {
    options.signal?.throwIfAborted();
    const limit = options.limit ?? 100;
    return this.#tx.read(() => {
      const rows =
        options.status === undefined
          ? this.#sql.list!.all(limit)
          : this.#sql.listByStatus!.all(options.status, limit);
      return (rows as OperationRow[]).map(toRecord);
    });
  }

  async sweep(options: SweepOptions): Promise<SweepResult> {
    let tombstoned = 0;
    let tombstonesDeleted = 0;
    let outboxDeleted = 0;
    let batches = 0;
    const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
    const deliveredBy =
      options.outboxRetentionMs === undefined ? undefined : options.now - options.outboxRetentionMs;
    const sizer = sweepBatchSizer(options);
    const maxDuty = options.maxDuty ?? DEFAULT_SWEEP_MAX_DUTY;
    pauseAfterBatch(0, maxDuty); // a bad maxDuty fails before any batch
    let helper: BackgroundCheckpoints | undefined;
    let engaged = false;
    try {
      while (batches < maxBatches) {
        options.signal?.throwIfAborted();
        const queued = this.#clock.monotonic();
        // Not durable: a batch lost in a power failure leaves expired receipts for the next sweep.
        const { moved, deleted, delivered } = await this.#tx.write(
          () => {
            const started = this.#clock.monotonic();
            const rows = sizer.size;
            this.#sql.tombstoneBatch!.run(options.tombstoneTtlMs, options.now, rows);
            this.#sql.deleteAttemptsBatch!.run(options.now, rows);
            const moved = this.#sql.deleteExpiredBatch!.run(options.now, rows).changes;
            const deleted = this.#sql.deleteTombstoneBatch!.run(options.now, rows).changes;
            const delivered = deliveredBy === undefined ? 0 : this.#outbox.sweepDelivered(deliveredBy, rows);
            sizer.record(Math.max(moved, deleted, delivered), this.#clock.monotonic() - started);
            return { moved, deleted, delivered };
          },
          { signal: options.signal, durable: false },
        );
        if (moved === 0 && deleted === 0 && delivered === 0) break;
        tombstoned += moved;
        tombstonesDeleted += deleted;
        outboxDeleted += delivered;
        batches += 1;
        if (batches === SWEEP_CHECKPOINTER_AFTER) {
          if (this.#background === undefined) helper = startBackgroundCheckpoints(this.#db, true);
          else if (this.#concurrency !== undefined) {
            // 'adaptive': the worker is there; the sweep hands it the checkpoints until it ends.
            this.#sweeping += 1;
            engaged = true;
            this.#background.engage(true);
          }
        }
        // Let queued writers in between batches, and leave them the lock and the disk for a while.
        const pause = pauseAfterBatch(this.#clock.monotonic() - queued, maxDuty);
        if (pause > 0) await this.#clock.sleep(pause, options);
        else await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      await helper?.stop();
      if (engaged) {
        this.#sweeping -= 1;
        if (this.#sweeping === 0) this.#background?.engage(this.#concurrency?.concurrent === true);
      }
    }
    return { tombstoned, tombstonesDeleted, outboxDeleted, batches };
  }

  async claimDue(options: ClaimOptions): Promise<OperationRecord | undefined> {
    return this.#tx.write(() => {
      const row = this.#sql.claimDue!.get(
        options.workerId,
        options.now + options.leaseMs,
        options.now,
        options.now,
      ) as OperationRow | undefined;
      if (row === undefined) return undefined;
      // The previous holder stopped before recording how its attempt ended.
      const repair = interruptedAttempt(options.workerId);
      this.#sql.closeOpenAttempts!.run(options.now, repair.outcome, repair.detail, row.operation_id);
      return toRecord(row);
    }, options);
  }

  async renewLease(
    operationId: string,
    workerId: string,
    leaseExpiresAt: number,
    options: SignalOption = {},
  ): Promise<boolean> {
    return this.#tx.write(
      () => this.#sql.renewLease!.run(leaseExpiresAt, operationId, workerId, this.#clock.now()).changes === 1,
      options,
    );
  }

  async transition(operationId: string, request: TransitionRequest): Promise<OperationRecord | undefined> {
    return this.#tx.write(() => {
      const current = this.#byId(operationId);
      const change = transitionChange(current, request);
      if (change === undefined) return undefined;
      const written = this.#write(current as OperationRecord, change);
      if (!isActive(written.status)) {
        const closing = closedWithState(written.status);
        this.#sql.closeOpenAttempts!.run(request.now, closing.outcome, closing.detail, operationId);
      }
      return written;
    }, request);
  }

  async startAttempt(operationId: string, start: AttemptStart): Promise<OperationRecord | undefined> {
    return this.#tx.write(() => {
      const current = this.#byId(operationId);
      const change = attemptChange(current, start);
      if (change === undefined) return undefined;
      this.#sql.insertAttempt!.run(
        start.attemptId,
        operationId,
        change.attemptCount,
        start.workerId,
        start.now,
      );
      return this.#write(current as OperationRecord, change);
    }, start);
  }

  async finishAttempt(attemptId: string, end: AttemptEnd): Promise<void> {
    await this.#tx.write(() => {
      this.#sql.finishAttempt!.run(end.endedAt, end.outcome, end.detail ?? null, attemptId);
    }, end);
  }

  async listAttempts(operationId: string, options: SignalOption = {}): Promise<AttemptRecord[]> {
    options.signal?.throwIfAborted();
    return this.#tx.read(() => (this.#sql.listAttempts!.all(operationId) as AttemptRow[]).map(toAttempt));
  }

  async requestCancel(
    operationId: string,
    now: number,
    options: SignalOption = {},
  ): Promise<OperationRecord | undefined> {
    return this.#tx.write(() => {
      const current = this.#byId(operationId);
      if (current === undefined) return undefined;
      const change = cancelChange(current, now);
      return change === undefined ? current : this.#write(current, change);
    }, options);
  }

  async resolve(operationId: string, resolution: Resolution): Promise<OperationRecord | undefined> {
    return this.#tx.write(() => {
      const current = this.#byId(operationId);
      return current === undefined ? undefined : this.#write(current, resolutionChange(current, resolution));
    }, resolution);
  }

  claimOutbox(options: ClaimOptions & { limit: number }): Promise<OutboxMessage[]> {
    return this.#outbox.claim(options);
  }

  completeOutbox(id: number, workerId: string, now: number, options: SignalOption = {}): Promise<void> {
    return this.#outbox.complete(id, workerId, now, options);
  }

  retryOutbox(
    id: number,
    workerId: string,
    nextAttemptAt: number,
    error: string,
    options: SignalOption = {},
  ): Promise<void> {
    return this.#outbox.retry(id, workerId, nextAttemptAt, error, options);
  }

  deadLetterOutbox(
    id: number,
    workerId: string,
    now: number,
    error: string,
    options: SignalOption = {},
  ): Promise<void> {
    return this.#outbox.deadLetter(id, workerId, now, error, options);
  }

  listDeadLetters(options: DeadLetterListOptions = {}): Promise<OutboxMessage[]> {
    return this.#outbox.listDeadLetters(options);
  }

  requeueOutbox(id: number, now: number, options: SignalOption = {}): Promise<OutboxMessage | undefined> {
    return this.#outbox.requeue(id, now, options);
  }

  async close(): Promise<void> {
    await this.#tx.drain();
    await this.#background?.stop();
    if (this.#db.open) this.#db.close();
  }

  #find(identity: OperationIdentity): Existing | undefined {
    const params = identityParams(identity);
    const values = this.#sql.findIdentity!.get(...params, ...params) as unknown[] | undefined;
    if (values === undefined) return undefined;
    // operation_id is never NULL in a receipt row; the tombstone arm selects NULL there.
    if (values[0] !== null) return { kind: 'receipt', receipt: toRecord(operationRowOf(values)) };
    const tomb = OPERATION_COLUMNS.length;
    return {
      kind: 'tombstone',
      tombstone: {
        identity,
        fingerprint: values[tomb] as string,
        receiptExpiredAt: values[tomb + 1] as number,
        expiresAt: values[tomb + 2] as number,
      },
    };
  }

  #byId(operationId: string): OperationRecord | undefined {
    const row = this.#sql.byOperationId!.get(operationId) as OperationRow | undefined;
    return row === undefined ? undefined : toRecord(row);
  }

  /** Writes the mutable columns of `current` changed by `change` (inside a transaction). */
  #write(current: OperationRecord, change: RecordChange): OperationRecord {
    return toRecord(this.#sql.patch!.get(...changeParams(current, change)) as OperationRow);
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

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
