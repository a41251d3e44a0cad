import type { OutboxMessage } from '../../core/operation-record.js';
import type { ClaimOptions, DeadLetterListOptions, SignalOption } from '../../store/store.js';
import { toOutbox, type OutboxRow } from '../operation-rows.js';
import type { PgClient } from './postgres-pool.js';

/** Runs one statement (or a few) on a pooled client, translating driver errors. */
export type PgRunner = <T>(body: (client: PgClient) => Promise<T>) => Promise<T>;

/** Stored reasons are cut to this length (they are short, body-free descriptions anyway). */
const MAX_ERROR_LENGTH = 500;

/**
 * The outbox half of PostgresStore. Each method is one statement, so it is atomic on its own. Every
 * write of a message that a dispatcher holds is guarded by `lease_owner`; a re-queue only by the
 * message being a dead letter. Claims skip rows another dispatcher is claiming (SKIP LOCKED).
 */
export class PostgresOutbox {
  readonly #run: PgRunner;

  constructor(run: PgRunner) {
    this.#run = run;
  }

  claim(options: ClaimOptions & { limit: number }): Promise<OutboxMessage[]> {
    return this.#run(async (client) => {
      const { rows } = await client.query<OutboxRow>(
        `UPDATE idem_outbox SET lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM idem_outbox
           WHERE dispatched_at IS NULL AND dead_at IS NULL AND next_attempt_at <= $3
             AND (lease_expires_at IS NULL OR lease_expires_at <= $3)
           ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [options.workerId, options.now + options.leaseMs, options.now, options.limit],
      );
      return rows.map(toOutbox).sort((a, b) => a.id - b.id);
    });
  }

  async complete(id: number, workerId: string, now: number, options: SignalOption): Promise<void> {
    options.signal?.throwIfAborted();
    await this.#run((client) =>
      client.query(
        'UPDATE idem_outbox SET dispatched_at = $1, lease_owner = NULL, lease_expires_at = NULL WHERE id = $2 AND lease_owner = $3',
        [now, id, workerId],
      ),
    );
  }

  async retry(
    id: number,
    workerId: string,
    nextAttemptAt: number,
    error: string,
    options: SignalOption,
  ): Promise<void> {
    options.signal?.throwIfAborted();
    await this.#run((client) =>
      client.query(
        `UPDATE idem_outbox SET next_attempt_at = $1, last_error = $2, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $3 AND lease_owner = $4`,
        [nextAttemptAt, error.slice(0, MAX_ERROR_LENGTH), id, workerId],
      ),
    );
  }

  async deadLetter(
    id: number,
    workerId: string,
    now: number,
    error: string,
    options: SignalOption,
  ): Promise<void> {
    options.signal?.throwIfAborted();
    await this.#run((client) =>
      client.query(
        `UPDATE idem_outbox SET dead_at = $1, last_error = $2, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $3 AND lease_owner = $4 AND dispatched_at IS NULL AND dead_at IS NULL`,
        [now, error.slice(0, MAX_ERROR_LENGTH), id, workerId],
      ),
    );
  }

  listDeadLetters(options: DeadLetterListOptions): Promise<OutboxMessage[]> {
    options.signal?.throwIfAborted();
    return this.#run(async (client) => {
      const { rows } = await client.query<OutboxRow>(
        'SELECT * FROM idem_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at, id LIMIT $1',
        [options.limit ?? 100],
      );
      return rows.map(toOutbox);
    });
  }

  requeue(id: number, now: number, options: SignalOption): Promise<OutboxMessage | undefined> {
    options.signal?.throwIfAborted();
    return this.#run(async (client) => {
      const { rows } = await client.query<OutboxRow>(
        `UPDATE idem_outbox SET dead_at = NULL, attempts = 0, next_attempt_at = $1, lease_owner = NULL,
           lease_expires_at = NULL
         WHERE id = $2 AND dead_at IS NOT NULL RETURNING *`,
        [now, id],
      );
      return rows[0] === undefined ? undefined : toOutbox(rows[0]);
    });
  }
}

/** Inside a sweep batch: deletes up to `rows` messages delivered at or before `deliveredBy`. */
export async function sweepDelivered(client: PgClient, deliveredBy: number, rows: number): Promise<number> {
  const result = await client.query(
    `DELETE FROM idem_outbox WHERE id IN (SELECT id FROM idem_outbox
       WHERE dispatched_at IS NOT NULL AND dispatched_at <= $1 ORDER BY dispatched_at LIMIT $2
       FOR UPDATE SKIP LOCKED)`,
    [deliveredBy, rows],
  );
  return result.rowCount ?? 0;
}
