import { DEFAULT_SWEEP_MAX_DUTY, pauseAfterBatch } from '../../core/batch-sizer.js';
import { systemClock, type Clock } from '../../core/clock.js';
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
import {
  changeParams,
  identityParams,
  operationParams,
  toAttempt,
  toRecord,
  type AttemptRow,
  type OperationRow,
} from '../operation-rows.js';
import { PostgresOutbox, sweepDelivered } from './postgres-outbox.js';
import {
  isConnectionLoss,
  isRetryableInAdapter,
  pgTarget,
  translateConnectError,
  translatePgError,
  type PgTarget,
} from './postgres-errors.js';
import {
  callStatements,
  findIdentity,
  IDENTITY_WHERE,
  identityLockKey,
  type CallStatements,
} from './call-statements.js';
import type { PgClient, PgPool, PgQueryResult } from './postgres-pool.js';
import { migratePostgres } from './postgres-schema.js';

export interface PostgresStoreOptions {
  /** `lock_timeout` of each write transaction: beyond it the call answers `busy`. Default 5000 ms. */
  lockTimeoutMs?: number;
  /** Re-runs of a transaction after a serialization failure or deadlock (40001, 40P01). Default 5. */
  maxRetries?: number;
  /** Apply migrations when the store is created. Default true. */
  migrate?: boolean;
  clock?: Clock;
  faults?: FaultPoints;
  /**
   * Send the statements of every call (the lookup, and the receipt's INSERT or upsert) as named
   * prepared statements, parsed and planned once per connection: in the bench this halves what the
   * lookup costs the server. Turn it off behind a pooler in transaction mode that does not keep prepared
   * statements (PgBouncer before 1.21, or without `max_prepared_statements`). Default true.
   */
  preparedStatements?: boolean;
}

const ACTIVE = "('accepted', 'running', 'cancel_requested')";
const FINAL = "('succeeded', 'failed', 'cancelled')";

/**
 * The PostgreSQL Store, for several server instances on one database. Concurrent calls with one
 * identity are serialized by the database (a transaction-scoped advisory lock on the identity, and
 * the primary key as a backstop), never by process memory. Replays are plain SELECTs that take no
 * lock and write nothing. Workers share operations through `FOR UPDATE SKIP LOCKED` and leases.
 */
export class PostgresStore implements Store<PgClient> {
  readonly faults: FaultPoints;
  readonly #pool: PgPool;
  readonly #clock: Clock;
  readonly #lockTimeoutMs: number;
  readonly #maxRetries: number;
  readonly #statements: CallStatements;
  /** The server and database, named in `unavailable` errors. */
  readonly #target: PgTarget;
  readonly #outbox: PostgresOutbox;

  private constructor(pool: PgPool, options: PostgresStoreOptions) {
    this.#pool = pool;
    this.#target = pgTarget(pool);
    this.#outbox = new PostgresOutbox((body) => this.#read(body));
    this.#statements = callStatements(options.preparedStatements ?? true);
    this.#clock = options.clock ?? systemClock;
    this.faults = options.faults ?? new FaultPoints();
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    this.#maxRetries = options.maxRetries ?? 5;
  }

  /** Creates the store, migrating the schema first unless `migrate: false`. */
  static async create(pool: PgPool, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    if (options.migrate ?? true) {
      try {
        await migratePostgres(pool);
      } catch (error) {
        throw translatePgError(error, { target: pgTarget(pool) });
      }
    }
    return new PostgresStore(pool, options);
  }

  async lookup(identity: OperationIdentity, options: SignalOption = {}): Promise<Existing | undefined> {
    options.signal?.throwIfAborted();
    return this.#read((client) => findIdentity(client, this.#statements.find, identity));
  }

  async commit(unit: CommitUnit<PgClient>, options: SignalOption = {}): Promise<CommitOutcome> {
    const lockKey = identityLockKey(unit.identity);
    if (unit.absent === true) {
      // Optimistic: the lookup under the lock is skipped unless another call holds the identity's
      // lock; the record's INSERT then refuses to write over a record or a tombstone.
      try {
        return await this.#transaction(
          (client, contended) => this.#commitBody(client, unit, contended ? 'look' : 'guard'),
          { ...options, commitFaults: true, lockKey, tryLock: true },
        );
      } catch (error) {
        if (!(error instanceof RecordRaced)) throw error;
        // Someone recorded this identity since the caller looked: rolled back, decide again.
      }
    }
    return this.#transaction((client) => this.#commitBody(client, unit, 'look'), {
      ...options,
      commitFaults: true,
      lockKey,
    });
  }

  /**
   * The body of a call's transaction, under the identity's lock. `look`: find what the identity
   * has, decide, then run the effect and upsert the record. `guard` (the caller found nothing just
   * before): run the effect at once and INSERT the record only where no record or tombstone
   * exists; otherwise throw RecordRaced, which rolls the effect back.
   */
  async #commitBody(
    client: PgClient,
    unit: CommitUnit<PgClient>,
    mode: 'look' | 'guard',
  ): Promise<CommitOutcome> {
    const existing =
      mode === 'look' ? await findIdentity(client, this.#statements.find, unit.identity) : undefined;
    const decision = unit.decide(existing);
    if (decision.kind !== 'execute') return { kind: 'decided', decision } as const;
    this.faults.hit('after_claim');
    const pending: Promise<unknown>[] = [];
    const context: EffectContext = {
      ...unit.context,
      enqueue: (intent) => {
        const now = this.#clock.now();
        const insert = client.query(
          `INSERT INTO idem_outbox (dedup_key, destination, payload_json, created_at, next_attempt_at)
           VALUES ($1, $2, $3, $4, $4) ON CONFLICT (dedup_key) DO NOTHING`,
          [intent.dedupKey, intent.destination, JSON.stringify(intent.payload), now],
        );
        pending.push(insert);
        return insert.then(() => undefined);
      },
    };
    const result = await unit.effect?.(client, context);
    await Promise.all(pending);
    this.faults.hit('after_effect');
    const record = unit.receipt(result);
    if (mode === 'guard') {
      const { rows } = await client.query<{ inserted: number; tombstoned: boolean }>({
        ...this.#statements.insertNew,
        values: operationParams(record),
      });
      if (rows[0]?.inserted !== 1 || rows[0]?.tombstoned !== false) throw new RecordRaced();
      return { kind: 'executed', receipt: record } as const;
    }
    // A tombstone past its life must not outlive the new record (rare: only then a round trip).
    if (existing?.kind === 'tombstone') {
      await client.query(
        `DELETE FROM idem_tombstones WHERE ${IDENTITY_WHERE}`,
        identityParams(record.identity),
      );
    }
    await client.query({ ...this.#statements.upsert, values: operationParams(record) });
    return { kind: 'executed', receipt: record } as const;
  }

  async getOperation(operationId: string, options: SignalOption = {}): Promise<OperationRecord | undefined> {
    options.signal?.throwIfAborted();
    return this.#read((client) => byId(client, operationId));
  }

  async listOperations(options: ListOptions = {}): Promise<OperationRecord[]> {
    options.signal?.throwIfAborted();
    const limit = options.limit ?? 100;
    return this.#read(async (client) => {
      const { rows } =
        options.status === undefined
          ? await client.query<OperationRow>(
              'SELECT * FROM idem_operations ORDER BY created_at DESC LIMIT $1',
              [limit],
            )
          : await client.query<OperationRow>(
              'SELECT * FROM idem_operations WHERE status = $1 ORDER BY created_at DESC LIMIT $2',
              [options.status, limit],
            );
      return rows.map(toRecord);
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
    // batchBudgetMs and maxDuty do not apply: a batch here locks only its own rows (SKIP LOCKED),
    // never a lock that callers wait for, so it takes the whole batchSize and never waits.
    pauseAfterBatch(0, options.maxDuty ?? DEFAULT_SWEEP_MAX_DUTY); // but a bad value is still refused
    const rows = options.batchSize;
    while (batches < maxBatches) {
      options.signal?.throwIfAborted();
      const { moved, deleted, delivered } = await this.#transaction(async (client) => {
        // Only final records expire; SKIP LOCKED keeps the sweeper out of writers' way.
        const movedResult = await client.query(
          `WITH batch AS (
             SELECT operation_id FROM idem_operations WHERE expires_at <= $1 AND status IN ${FINAL}
             ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED),
           moved AS (
             DELETE FROM idem_operations o USING batch b WHERE o.operation_id = b.operation_id RETURNING o.*),
           attempts AS (
             DELETE FROM idem_attempts a USING moved m WHERE a.operation_id = m.operation_id)
           INSERT INTO idem_tombstones
             (principal, workspace, operation, version, idem_key, fingerprint, receipt_expired_at, expires_at)
           SELECT principal, workspace, operation, version, idem_key, fingerprint, expires_at, expires_at + $3 FROM moved
           ON CONFLICT (principal, workspace, operation, version, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint,
             receipt_expired_at = excluded.receipt_expired_at, expires_at = excluded.expires_at`,
          [options.now, rows, options.tombstoneTtlMs],
        );
        const deletedResult = await client.query(
          `DELETE FROM idem_tombstones WHERE ctid IN
             (SELECT ctid FROM idem_tombstones WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [options.now, rows],
        );
        const delivered = deliveredBy === undefined ? 0 : await sweepDelivered(client, deliveredBy, rows);
        return { moved: movedResult.rowCount ?? 0, deleted: deletedResult.rowCount ?? 0, delivered };
      }, options);
      if (moved === 0 && deleted === 0 && delivered === 0) break;
      tombstoned += moved;
      tombstonesDeleted += deleted;
      outboxDeleted += delivered;
      batches += 1;
    }
    return { tombstoned, tombstonesDeleted, outboxDeleted, batches };
  }

  async claimDue(options: ClaimOptions): Promise<OperationRecord | undefined> {
    // One statement: the claim, and the repair of attempts the previous holder left open.
    const repair = interruptedAttempt(options.workerId);
    return this.#read(async (client) => {
      const { rows } = await client.query<OperationRow>(
        `WITH claimed AS (
           UPDATE idem_operations SET lease_owner = $1, lease_expires_at = $2
           WHERE operation_id = (SELECT operation_id FROM idem_operations
             WHERE status IN ${ACTIVE} AND kind = 'durable'
               AND (lease_expires_at IS NULL OR lease_expires_at <= $3)
               AND (next_attempt_at IS NULL OR next_attempt_at <= $3)
             ORDER BY COALESCE(next_attempt_at, created_at) LIMIT 1 FOR UPDATE SKIP LOCKED)
           RETURNING *),
         repaired AS (
           UPDATE idem_attempts SET ended_at = $3, outcome = $4, detail = $5
           WHERE operation_id IN (SELECT operation_id FROM claimed) AND ended_at IS NULL)
         SELECT * FROM claimed`,
        [options.workerId, options.now + options.leaseMs, options.now, repair.outcome, repair.detail],
      );
      return rows[0] === undefined ? undefined : toRecord(rows[0]);
    });
  }

  async renewLease(
    operationId: string,
    workerId: string,
    leaseExpiresAt: number,
    options: SignalOption = {},
  ): Promise<boolean> {
    options.signal?.throwIfAborted();
    return this.#read(async (client) => {
      const result = await client.query(
        `UPDATE idem_operations SET lease_expires_at = $1
         WHERE operation_id = $2 AND lease_owner = $3 AND lease_expires_at > $4`,
        [leaseExpiresAt, operationId, workerId, this.#clock.now()],
      );
      return result.rowCount === 1;
    });
  }

  async transition(operationId: string, request: TransitionRequest): Promise<OperationRecord | undefined> {
    return this.#transaction(async (client) => {
      const current = await byId(client, operationId, true);
      const change = transitionChange(current, request);
      if (change === undefined) return undefined;
      const written = await update(client, current as OperationRecord, change);
      if (!isActive(written.status)) {
        const closing = closedWithState(written.status);
        await client.query(
          `UPDATE idem_attempts SET ended_at = $1, outcome = $2, detail = $3
           WHERE operation_id = $4 AND ended_at IS NULL`,
          [request.now, closing.outcome, closing.detail, operationId],
        );
      }
      return written;
    }, request);
  }

  async startAttempt(operationId: string, start: AttemptStart): Promise<OperationRecord | undefined> {
    return this.#transaction(async (client) => {
      const current = await byId(client, operationId, true);
      const change = attemptChange(current, start);
      if (change === undefined) return undefined;
      await client.query(
        'INSERT INTO idem_attempts (attempt_id, operation_id, number, worker_id, started_at) VALUES ($1, $2, $3, $4, $5)',
        [start.attemptId, operationId, change.attemptCount, start.workerId, start.now],
      );
      return update(client, current as OperationRecord, change);
    }, start);
  }

  async finishAttempt(attemptId: string, end: AttemptEnd): Promise<void> {
    await this.#read((client) =>
      client.query(
        'UPDATE idem_attempts SET ended_at = $1, outcome = $2, detail = $3 WHERE attempt_id = $4',
        [end.endedAt, end.outcome, end.detail ?? null, attemptId],
      ),
    );
  }

  async listAttempts(operationId: string, options: SignalOption = {}): Promise<AttemptRecord[]> {
    options.signal?.throwIfAborted();
    return this.#read(async (client) => {
      const { rows } = await client.query<AttemptRow>(
        'SELECT * FROM idem_attempts WHERE operation_id = $1 ORDER BY number',
        [operationId],
      );
      return rows.map(toAttempt);
    });
  }

  async requestCancel(
    operationId: string,
    now: number,
    options: SignalOption = {},
  ): Promise<OperationRecord | undefined> {
    return this.#transaction(async (client) => {
      const current = await byId(client, operationId, true);
      if (current === undefined) return undefined;
      const change = cancelChange(current, now);
      return change === undefined ? current : update(client, current, change);
    }, options);
  }

  async resolve(operationId: string, resolution: Resolution): Promise<OperationRecord | undefined> {
    return this.#transaction(async (client) => {
      const current = await byId(client, operationId, true);
      return current === undefined
        ? undefined
        : update(client, current, resolutionChange(current, resolution));
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

  /** The pool is the caller's: closing the store does not end it. */
  async close(): Promise<void> {}

  /** One statement (or a few) outside an explicit transaction, on a pooled client. */
  async #read<T>(body: (client: PgClient) => Promise<T>): Promise<T> {
    let client: PgClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw translateConnectError(error, this.#target);
    }
    try {
      const value = await body(client);
      client.release();
      return value;
    } catch (error) {
      client.release(isConnectionLoss(error) ? (error as Error) : undefined);
      throw translatePgError(error, { target: this.#target });
    }
  }

  /**
   * Runs `body` in one transaction with `lock_timeout`, re-running it after a serialization failure
   * or deadlock (bounded, with backoff). A connection lost during COMMIT is `outcome_unknown`
   * (retryable: the retry finds the committed record or nothing); lost before it, `unavailable`
   * (retryable: nothing was committed).
   */
  /**
   * Runs `body` in a transaction, re-running it after a serialization failure or deadlock. With
   * `lockKey`, the transaction holds that advisory lock; with `tryLock` it only tries it first, and
   * tells `body` (`contended`) when it had to wait because another transaction held it.
   */
  async #transaction<T>(
    body: (client: PgClient, contended: boolean) => Promise<T>,
    options: SignalOption & { commitFaults?: boolean; lockKey?: bigint; tryLock?: boolean } = {},
  ): Promise<T> {
    // One round trip: BEGIN, the transaction's lock bound and, for a call, the identity's lock.
    // A bigint prints as digits only, so it is safe inline in the simple-query protocol.
    const key = options.lockKey?.toString();
    const lock =
      key === undefined
        ? ''
        : options.tryLock === true
          ? `; SELECT pg_try_advisory_xact_lock(${key}) AS free`
          : `; SELECT pg_advisory_xact_lock(${key})`;
    const begin = `BEGIN; SET LOCAL lock_timeout = ${Math.max(1, Math.round(this.#lockTimeoutMs))}${lock}`;
    for (let attempt = 0; ; attempt += 1) {
      options.signal?.throwIfAborted();
      let client: PgClient;
      try {
        client = await this.#pool.connect();
      } catch (error) {
        throw translateConnectError(error, this.#target);
      }
      let committing = false;
      try {
        const begun = await client.query<{ free?: boolean }>(begin);
        let contended = false;
        if (options.tryLock === true && key !== undefined && lastResult(begun).rows[0]?.free !== true) {
          contended = true;
          await client.query(`SELECT pg_advisory_xact_lock(${key})`);
        }
        const value = await body(client, contended);
        if (options.commitFaults) this.faults.hit('before_commit');
        committing = true;
        await client.query('COMMIT');
        client.release();
        if (options.commitFaults) this.#afterCommit();
        return value;
      } catch (error) {
        if (committing && !isConnectionLoss(error) && isIdemErrorLike(error)) throw error; // after_commit fault
        const lost = isConnectionLoss(error);
        if (!committing && !lost) await client.query('ROLLBACK').catch(() => undefined);
        client.release(lost ? (error as Error) : undefined);
        if (error instanceof RecordRaced) throw error;
        if (!committing && isRetryableInAdapter(error) && attempt < this.#maxRetries) {
          await this.#clock.sleep(Math.min(200, 2 * 2 ** attempt) * (0.5 + Math.random() / 2), options);
          continue;
        }
        throw translatePgError(error, { duringCommit: committing, target: this.#target });
      }
    }
  }

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
}

/** The guarded INSERT found a record or tombstone written since the caller's lookup. */
class RecordRaced extends Error {
  constructor() {
    super('a record or tombstone for this identity appeared since the lookup');
  }
}

/** node-postgres answers a multi-statement simple query with one result per statement. */
function lastResult<Row>(result: PgQueryResult<Row> | PgQueryResult<Row>[]): PgQueryResult<Row> {
  return Array.isArray(result) ? (result[result.length - 1] as PgQueryResult<Row>) : result;
}

function isIdemErrorLike(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'IdemError';
}

async function byId(
  client: PgClient,
  operationId: string,
  forUpdate = false,
): Promise<OperationRecord | undefined> {
  const { rows } = await client.query<OperationRow>(
    `SELECT * FROM idem_operations WHERE operation_id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [operationId],
  );
  return rows[0] === undefined ? undefined : toRecord(rows[0]);
}

/** Writes the mutable columns of `current` changed by `change` (inside a transaction). */
async function update(
  client: PgClient,
  current: OperationRecord,
  change: RecordChange,
): Promise<OperationRecord> {
  const { rows } = await client.query<OperationRow>(
    `UPDATE idem_operations SET status = $1, resource_id = $2, result_json = $3, error_json = $4, expires_at = $5,
       dispatched = $6::int::boolean, next_attempt_at = $7, lease_owner = $8, lease_expires_at = $9, updated_at = $10,
       attempt_count = $11, cancel_requested_at = $12, resolved_by = $13, resolved_at = $14, audit_json = $15
     WHERE operation_id = $16 RETURNING *`,
    changeParams(current, change),
  );
  return toRecord(rows[0] as OperationRow);
}
