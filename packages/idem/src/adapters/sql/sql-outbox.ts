import type { OutboxMessage } from '../../core/operation-record.js';
import { andThen } from '../../core/steps.js';
import type { SignalOption } from '../../ports/maybe-async.js';
import type { ClaimOptions } from '../../ports/operations-ledger.js';
import type { OutboxSettlement, OutboxStore } from '../../ports/outbox-store.js';
import { toOutbox, type OutboxRow } from '../operation-rows.js';
import type { SharedSql } from './shared-sql.js';
import type { SqlDriver } from './sql-driver.js';

/** Stored reasons are cut to this length (they are short, body-free descriptions anyway). */
export const MAX_OUTBOX_ERROR_LENGTH = 500;

/** The outbox over any SQL driver. Every write to a held message is guarded by `lease_owner`. */
export class SqlOutbox implements OutboxStore {
  readonly #driver: SqlDriver<unknown>;
  readonly #sql: SharedSql;

  constructor(driver: SqlDriver<unknown>, sql: SharedSql) {
    this.#driver = driver;
    this.#sql = sql;
  }

  claim(options: ClaimOptions & { readonly limit: number }): Promise<OutboxMessage[]> {
    const params = [options.workerId, options.now + options.leaseMs, options.now, options.now, options.limit];
    return this.#driver.transaction(
      (conn) =>
        andThen(conn.all<OutboxRow>(this.#sql.claimOutbox, params), (rows) =>
          // RETURNING promises no order on either engine.
          rows.map(toOutbox).sort((a, b) => a.id - b.id),
        ),
      options,
    );
  }

  settle(
    id: number,
    workerId: string,
    settlement: OutboxSettlement,
    options: SignalOption = {},
  ): Promise<boolean> {
    const sql = this.#sql;
    const [statement, params] =
      settlement.kind === 'delivered'
        ? [sql.delivered, [settlement.at, id, workerId]]
        : [
            settlement.kind === 'retry' ? sql.retry : sql.dead,
            [settlement.at, settlement.error.slice(0, MAX_OUTBOX_ERROR_LENGTH), id, workerId],
          ];
    return this.#driver.transaction(
      (conn) => andThen(conn.run(statement, params), (changed) => changed === 1),
      options,
    );
  }

  deadLetters(options: SignalOption & { readonly limit?: number } = {}): Promise<OutboxMessage[]> {
    return this.#driver.read(
      (conn) =>
        andThen(conn.all<OutboxRow>(this.#sql.deadLetters, [options.limit ?? 100]), (rows) =>
          rows.map(toOutbox),
        ),
      options,
    );
  }

  requeue(id: number, now: number, options: SignalOption = {}): Promise<OutboxMessage | undefined> {
    return this.#driver.transaction(
      (conn) =>
        andThen(conn.all<OutboxRow>(this.#sql.requeue, [now, id]), (rows) =>
          rows[0] === undefined ? undefined : toOutbox(rows[0]),
        ),
      options,
    );
  }
}
