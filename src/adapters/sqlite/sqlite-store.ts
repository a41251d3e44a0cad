import { systemClock, type Clock } from '../../core/clock.js';
import { IdemError } from '../../core/errors.js';
import { FaultPoints } from '../../core/fault-points.js';
import type { JsonObject } from '../../core/json.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { Existing, Receipt } from '../../core/receipt.js';
import type {
  CommitOutcome,
  CommitUnit,
  ListOptions,
  SignalOption,
  Store,
  SweepOptions,
  SweepResult,
} from '../../store/store.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';
import { isSqliteBusy, translateSqliteError } from './sqlite-errors.js';
import { migrateSqlite } from './sqlite-schema.js';

export interface SqliteStoreOptions {
  /** How long a write waits for the database's write lock before answering `busy`. Default 5000 ms. */
  lockTimeoutMs?: number;
  /** Apply migrations when the store is created. Default true. */
  migrate?: boolean;
  clock?: Clock;
  faults?: FaultPoints;
}

interface OperationRow {
  operation_id: string;
  principal: string;
  workspace: string;
  operation: string;
  version: number;
  idem_key: string;
  fingerprint: string;
  status: string;
  resource_id: string;
  result_json: string;
  created_at: number;
  expires_at: number;
}

interface TombstoneRow {
  fingerprint: string;
  receipt_expired_at: number;
  expires_at: number;
}

const IDENTITY_WHERE = 'principal = ? AND workspace = ? AND operation = ? AND version = ? AND idem_key = ?';

/**
 * The SQLite Store. better-sqlite3 is synchronous, so a whole transaction (BEGIN IMMEDIATE, lookup,
 * effect, receipt, COMMIT) runs in one tick: nothing else can use the connection in between. Only
 * the wait for the write lock is asynchronous, and writers wait in a FIFO queue, so concurrent
 * callers are queued, never mixed. Replays read committed data without taking the write lock.
 */
export class SqliteStore implements Store<SqliteDatabase> {
  readonly faults: FaultPoints;
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #lockTimeoutMs: number;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #sql: Record<
    | 'findOperation'
    | 'findTombstone'
    | 'insertOperation'
    | 'deleteTombstone'
    | 'byOperationId'
    | 'list'
    | 'listByStatus'
    | 'tombstoneBatch'
    | 'deleteExpiredBatch'
    | 'deleteTombstoneBatch',
    SqliteStatement
  >;

  constructor(db: SqliteDatabase, options: SqliteStoreOptions = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    this.faults = options.faults ?? new FaultPoints();
    // Idem waits for the write lock itself (asynchronously); the driver must never block the event loop.
    db.pragma('busy_timeout = 0');
    if (options.migrate ?? true) this.#withLockRetrySync(() => migrateSqlite(db));
    const expiredBatch =
      'SELECT rowid FROM idem_operations WHERE expires_at <= ? ORDER BY expires_at, rowid LIMIT ?';
    this.#sql = {
      findOperation: db.prepare(`SELECT * FROM idem_operations WHERE ${IDENTITY_WHERE}`),
      findTombstone: db.prepare(
        `SELECT fingerprint, receipt_expired_at, expires_at FROM idem_tombstones WHERE ${IDENTITY_WHERE}`,
      ),
      insertOperation: db.prepare(
        `INSERT INTO idem_operations (operation_id, principal, workspace, operation, version, idem_key,
           fingerprint, status, resource_id, result_json, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (principal, workspace, operation, version, idem_key) DO UPDATE SET
           operation_id = excluded.operation_id, fingerprint = excluded.fingerprint,
           status = excluded.status, resource_id = excluded.resource_id,
           result_json = excluded.result_json, created_at = excluded.created_at,
           expires_at = excluded.expires_at`,
      ),
      deleteTombstone: db.prepare(`DELETE FROM idem_tombstones WHERE ${IDENTITY_WHERE}`),
      byOperationId: db.prepare('SELECT * FROM idem_operations WHERE operation_id = ?'),
      list: db.prepare('SELECT * FROM idem_operations ORDER BY created_at DESC, rowid DESC LIMIT ?'),
      listByStatus: db.prepare(
        'SELECT * FROM idem_operations WHERE status = ? ORDER BY created_at DESC, rowid DESC LIMIT ?',
      ),
      tombstoneBatch: db.prepare(
        `INSERT OR REPLACE INTO idem_tombstones
           (principal, workspace, operation, version, idem_key, fingerprint, receipt_expired_at, expires_at)
         SELECT principal, workspace, operation, version, idem_key, fingerprint, expires_at, expires_at + ?
         FROM idem_operations WHERE rowid IN (${expiredBatch})`,
      ),
      deleteExpiredBatch: db.prepare(`DELETE FROM idem_operations WHERE rowid IN (${expiredBatch})`),
      deleteTombstoneBatch: db.prepare(
        `DELETE FROM idem_tombstones WHERE rowid IN
           (SELECT rowid FROM idem_tombstones WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
      ),
    };
  }

  async lookup(identity: OperationIdentity, options: SignalOption = {}): Promise<Existing | undefined> {
    options.signal?.throwIfAborted();
    return this.#read(() => this.#find(identity));
  }

  async commit(unit: CommitUnit<SqliteDatabase>, options: SignalOption = {}): Promise<CommitOutcome> {
    return this.#write(() => {
      const decision = unit.decide(this.#find(unit.identity));
      if (decision.kind !== 'execute') return { kind: 'decided', decision } as const;
      this.faults.hit('after_claim');
      const result = unit.effect(this.#db, unit.context);
      if (isThenable(result)) {
        throw new IdemError(
          'internal',
          'a SQLite effect must be synchronous: it runs inside the transaction',
        );
      }
      this.faults.hit('after_effect');
      const receipt = unit.receipt(result);
      this.#insert(receipt);
      return { kind: 'executed', receipt } as const;
    }, options);
  }

  async getOperation(operationId: string, options: SignalOption = {}): Promise<Receipt | undefined> {
    options.signal?.throwIfAborted();
    return this.#read(() => {
      const row = this.#sql.byOperationId.get(operationId) as OperationRow | undefined;
      return row === undefined ? undefined : toReceipt(row);
    });
  }

  async listOperations(options: ListOptions = {}): Promise<Receipt[]> {
    options.signal?.throwIfAborted();
    const limit = options.limit ?? 100;
    return this.#read(() => {
      const rows =
        options.status === undefined
          ? this.#sql.list.all(limit)
          : this.#sql.listByStatus.all(options.status, limit);
      return (rows as OperationRow[]).map(toReceipt);
    });
  }

  async sweep(options: SweepOptions): Promise<SweepResult> {
    let tombstoned = 0;
    let tombstonesDeleted = 0;
    let batches = 0;
    const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
    while (batches < maxBatches) {
      options.signal?.throwIfAborted();
      const { moved, deleted } = await this.#write(() => {
        this.#sql.tombstoneBatch.run(options.tombstoneTtlMs, options.now, options.batchSize);
        const moved = this.#sql.deleteExpiredBatch.run(options.now, options.batchSize).changes;
        const deleted = this.#sql.deleteTombstoneBatch.run(options.now, options.batchSize).changes;
        return { moved, deleted };
      }, options);
      if (moved === 0 && deleted === 0) break;
      tombstoned += moved;
      tombstonesDeleted += deleted;
      batches += 1;
      // Let queued writers in between batches.
      await this.#clock.sleep(0, options);
    }
    return { tombstoned, tombstonesDeleted, batches };
  }

  async close(): Promise<void> {
    await this.#queue.catch(() => undefined);
    if (this.#db.open) this.#db.close();
  }

  #find(identity: OperationIdentity): Existing | undefined {
    const params = identityParams(identity);
    const row = this.#sql.findOperation.get(...params) as OperationRow | undefined;
    if (row !== undefined) return { kind: 'receipt', receipt: toReceipt(row) };
    const tomb = this.#sql.findTombstone.get(...params) as TombstoneRow | undefined;
    if (tomb === undefined) return undefined;
    return {
      kind: 'tombstone',
      tombstone: {
        identity,
        fingerprint: tomb.fingerprint,
        receiptExpiredAt: tomb.receipt_expired_at,
        expiresAt: tomb.expires_at,
      },
    };
  }

  #insert(receipt: Receipt): void {
    const { identity } = receipt;
    // A stale row for this identity (an expired tombstone not yet swept) must not outlive the new receipt.
    this.#sql.deleteTombstone.run(...identityParams(identity));
    this.#sql.insertOperation.run(
      receipt.operationId,
      ...identityParams(identity),
      receipt.fingerprint,
      receipt.status,
      receipt.resourceId,
      JSON.stringify(receipt.result),
      receipt.createdAt,
      receipt.expiresAt,
    );
  }

  #read<T>(body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw translateSqliteError(error, 50);
    }
  }

  /** Queues `body` to run synchronously inside BEGIN IMMEDIATE ... COMMIT once the lock is free. */
  #write<T>(body: () => T, options: SignalOption): Promise<T> {
    const run = this.#queue.then(() => this.#acquireAndRun(body, options));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #acquireAndRun<T>(body: () => T, options: SignalOption): Promise<T> {
    const started = this.#clock.monotonic();
    let pause = 1;
    for (;;) {
      options.signal?.throwIfAborted();
      const outcome = this.#tryTransaction(body);
      if (outcome.ok) {
        this.#afterCommit();
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
      this.faults.hit('after_commit');
    } catch (cause) {
      throw new IdemError('outcome_unknown', 'the transaction committed but the call did not complete', {
        cause,
        retryable: true,
        nextAction: 'Retry with the same idempotency_key and arguments to get the recorded result.',
      });
    }
  }

  /** Runs one transaction synchronously; returns `ok: false` only when the write lock was taken. */
  #tryTransaction<T>(body: () => T): { ok: true; value: T } | { ok: false } {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      if (isSqliteBusy(error)) return { ok: false };
      throw translateSqliteError(error, 50);
    }
    try {
      const value = body();
      this.faults.hit('before_commit');
      this.#db.exec('COMMIT');
      return { ok: true, value };
    } catch (error) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      throw translateSqliteError(error, 50);
    }
  }

  #withLockRetrySync<T>(body: () => T): T {
    // Start-up only: several processes may migrate the same file at once.
    const deadline = this.#clock.monotonic() + this.#lockTimeoutMs;
    for (;;) {
      try {
        return body();
      } catch (error) {
        if (!isSqliteBusy(error) || this.#clock.monotonic() > deadline) throw translateSqliteError(error, 50);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      }
    }
  }
}

function identityParams(identity: OperationIdentity): [string, string, string, number, string] {
  return [identity.principal, identity.workspace, identity.operation, identity.version, identity.key];
}

function toReceipt(row: OperationRow): Receipt {
  return {
    operationId: row.operation_id,
    identity: {
      principal: row.principal,
      workspace: row.workspace,
      operation: row.operation,
      version: row.version,
      key: row.idem_key,
    },
    fingerprint: row.fingerprint,
    status: 'succeeded',
    resourceId: row.resource_id,
    result: JSON.parse(row.result_json) as JsonObject,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
