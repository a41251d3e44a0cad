import type { Clock } from '../../core/clock.js';
import type { OutboxMessage } from '../../core/operation-record.js';
import type { ClaimOptions, DeadLetterListOptions, OutboxIntent, SignalOption } from '../../store/store.js';
import { toOutbox, type OutboxRow } from '../operation-rows.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';
import type { SqliteTransactor } from './sqlite-transactor.js';

/** Stored reasons are cut to this length (they are short, body-free descriptions anyway). */
const MAX_ERROR_LENGTH = 500;

/**
 * The outbox half of SqliteStore: its statements, and the store's outbox methods. Every write of a
 * message that a dispatcher holds is guarded by `lease_owner`; a re-queue only by the message being
 * a dead letter. Runs its writes through the store's transactor, so they queue with every other.
 */
export class SqliteOutbox {
  readonly #tx: SqliteTransactor;
  readonly #clock: Clock;
  readonly #sql: Record<
    'enqueue' | 'claim' | 'complete' | 'retry' | 'deadLetter' | 'listDead' | 'requeue' | 'sweepDelivered',
    SqliteStatement
  >;

  constructor(db: SqliteDatabase, tx: SqliteTransactor, clock: Clock) {
    this.#tx = tx;
    this.#clock = clock;
    this.#sql = {
      enqueue: db.prepare(
        `INSERT INTO idem_outbox (dedup_key, destination, payload_json, created_at, next_attempt_at)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (dedup_key) DO NOTHING`,
      ),
      claim: db.prepare(
        `UPDATE idem_outbox SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
         WHERE id IN (SELECT id FROM idem_outbox
           WHERE dispatched_at IS NULL AND dead_at IS NULL AND next_attempt_at <= ?
             AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
           ORDER BY id LIMIT ?)
         RETURNING *`,
      ),
      complete: db.prepare(
        `UPDATE idem_outbox SET dispatched_at = ?, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND lease_owner = ?`,
      ),
      retry: db.prepare(
        `UPDATE idem_outbox SET next_attempt_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND lease_owner = ?`,
      ),
      deadLetter: db.prepare(
        `UPDATE idem_outbox SET dead_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND lease_owner = ? AND dispatched_at IS NULL AND dead_at IS NULL`,
      ),
      listDead: db.prepare(
        'SELECT * FROM idem_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at, id LIMIT ?',
      ),
      requeue: db.prepare(
        `UPDATE idem_outbox SET dead_at = NULL, attempts = 0, next_attempt_at = ?, lease_owner = NULL,
           lease_expires_at = NULL
         WHERE id = ? AND dead_at IS NOT NULL RETURNING *`,
      ),
      sweepDelivered: db.prepare(
        `DELETE FROM idem_outbox WHERE id IN (SELECT id FROM idem_outbox
           WHERE dispatched_at IS NOT NULL AND dispatched_at <= ? ORDER BY dispatched_at LIMIT ?)`,
      ),
    };
  }

  /** Inside the effect's transaction. */
  enqueue(intent: OutboxIntent): void {
    const now = this.#clock.now();
    this.#sql.enqueue.run(intent.dedupKey, intent.destination, JSON.stringify(intent.payload), now, now);
  }

  claim(options: ClaimOptions & { limit: number }): Promise<OutboxMessage[]> {
    return this.#tx.write(() => {
      const rows = this.#sql.claim.all(
        options.workerId,
        options.now + options.leaseMs,
        options.now,
        options.now,
        options.limit,
      ) as OutboxRow[];
      return rows.map(toOutbox);
    }, options);
  }

  async complete(id: number, workerId: string, now: number, options: SignalOption): Promise<void> {
    await this.#tx.write(() => this.#sql.complete.run(now, id, workerId), options);
  }

  async retry(
    id: number,
    workerId: string,
    nextAttemptAt: number,
    error: string,
    options: SignalOption,
  ): Promise<void> {
    await this.#tx.write(
      () => this.#sql.retry.run(nextAttemptAt, error.slice(0, MAX_ERROR_LENGTH), id, workerId),
      options,
    );
  }

  async deadLetter(
    id: number,
    workerId: string,
    now: number,
    error: string,
    options: SignalOption,
  ): Promise<void> {
    await this.#tx.write(
      () => this.#sql.deadLetter.run(now, error.slice(0, MAX_ERROR_LENGTH), id, workerId),
      options,
    );
  }

  async listDeadLetters(options: DeadLetterListOptions): Promise<OutboxMessage[]> {
    options.signal?.throwIfAborted();
    return this.#tx.read(() => (this.#sql.listDead.all(options.limit ?? 100) as OutboxRow[]).map(toOutbox));
  }

  requeue(id: number, now: number, options: SignalOption): Promise<OutboxMessage | undefined> {
    return this.#tx.write(() => {
      const row = this.#sql.requeue.get(now, id) as OutboxRow | undefined;
      return row === undefined ? undefined : toOutbox(row);
    }, options);
  }

  /** Inside a sweep batch: deletes up to `rows` messages delivered at or before `deliveredBy`. */
  sweepDelivered(deliveredBy: number, rows: number): number {
    return this.#sql.sweepDelivered.run(deliveredBy, rows).changes;
  }
}
