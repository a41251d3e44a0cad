import type { OperationIdentity } from '../../core/operation-identity.js';
import type { Existing } from '../../core/receipt.js';
import { andThen } from '../../core/steps.js';
import type { Clock } from '../../core/clock.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';
import {
  ReceiptRace,
  type ReceiptCapabilities,
  type ReceiptStore,
  type ReceiptTransaction,
  type ReceiptTransactionOptions,
} from '../../ports/receipt-store.js';
import { identityParams } from '../operation-rows.js';
import type { SharedSql } from './shared-sql.js';
import type { CallSql, SqlConnection, SqlDriver } from './sql-driver.js';
import { LookupBatcher } from './lookup-batcher.js';

/** Receipts over any SQL driver: the dialect's call statements, in the driver's transaction. */
export class SqlReceipts<Tx> implements ReceiptStore<Tx> {
  readonly capabilities: ReceiptCapabilities;
  readonly #driver: SqlDriver<Tx>;
  readonly #sql: SharedSql;
  readonly #clock: Clock;
  /**
   * The lookups of one turn read together: in one statement on an asynchronous driver whose dialect
   * reads several keys at once (PostgreSQL), else in one read transaction where the driver has one
   * (SQLite).
   */
  readonly #batcher: LookupBatcher | undefined;

  constructor(driver: SqlDriver<Tx>, sql: SharedSql, clock: Clock) {
    this.#driver = driver;
    this.#sql = sql;
    this.#clock = clock;
    this.capabilities = driver.capabilities;
    const { find, findMany } = driver.dialect.call;
    const readOne = (identity: OperationIdentity, options: SignalOption) =>
      driver.read((conn) => find(conn, identity), options);
    if (findMany !== undefined && !driver.capabilities.synchronous) {
      this.#batcher = new LookupBatcher(
        (identities) => driver.read((conn) => findMany(conn, identities)),
        readOne,
      );
    } else if (driver.readTogether !== undefined) {
      const together = driver.readTogether.bind(driver);
      this.#batcher = new LookupBatcher(
        (identities) => together((conn) => findEach(find, conn, identities)),
        readOne,
        { firstAtOnce: true },
      );
    }
  }

  lookup(identity: OperationIdentity, options: SignalOption = {}): Promise<Existing | undefined> {
    if (this.#batcher !== undefined) return this.#batcher.lookup(identity, options);
    return this.#driver.read((conn) => this.#driver.dialect.call.find(conn, identity), options);
  }

  transaction<T>(
    identity: OperationIdentity,
    body: (tx: ReceiptTransaction<Tx>) => MaybePromise<T>,
    options: ReceiptTransactionOptions = {},
  ): Promise<T> {
    const call = this.#driver.dialect.call;
    const sql = this.#sql;
    const tryLock = options.absent === true && this.capabilities.optimisticInsert;
    return this.#driver.transaction(
      (conn, handle, contended) =>
        body({
          handle,
          contended,
          find: () => call.find(conn, identity),
          put: (record, previous) => {
            if (previous === 'absent') {
              if (call.insertNew === undefined) throw new TypeError('this dialect has no optimistic insert');
              return andThen(call.insertNew(conn, record), (inserted) => {
                if (!inserted) throw new ReceiptRace();
              });
            }
            // A tombstone past its life (of this or another version of the operation) must not
            // outlive the new record (rare: only then a DELETE).
            if (previous?.kind !== 'tombstone') return call.upsert(conn, record);
            return andThen(conn.run(sql.deleteTombstone, identityParams(previous.tombstone.identity)), () =>
              call.upsert(conn, record),
            );
          },
          enqueue: (intent) => {
            const now = this.#clock.now();
            const params = [intent.dedupKey, intent.destination, JSON.stringify(intent.payload), now, now];
            return andThen(conn.run(sql.enqueue, params), () => undefined);
          },
        }),
      { ...options, lock: { identity, tryLock } },
    );
  }
}

/** `find` of each identity in turn on one connection, answered in their order. */
function findEach(
  find: CallSql['find'],
  conn: SqlConnection,
  identities: readonly OperationIdentity[],
): MaybePromise<(Existing | undefined)[]> {
  const found: (Existing | undefined)[] = [];
  let steps: MaybePromise<void> = undefined;
  for (const identity of identities) {
    steps = andThen(steps, () =>
      andThen(find(conn, identity), (existing) => {
        found.push(existing);
      }),
    );
  }
  return andThen(steps, () => found);
}
