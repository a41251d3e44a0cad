import { abandonOnAbort } from '../../core/abandon-on-abort.js';
import { isIdemError } from '../../core/errors.js';
import {
  pgIdentityLock,
  pgTransactionProtocol,
  runPgTransaction,
  translatePgFailure,
  type PgTransactionOptions,
} from '../../adapters/postgres/pg-transaction.js';
import { isConnectionLoss, isPoolWaitTimeout, sqlState } from '../../adapters/postgres/postgres-errors.js';
import type {
  SqlConnection,
  SqlDialect,
  SqlDriver,
  SqlStatement,
  SqlTransactionOptions,
  SqlValue,
} from '../../adapters/sql/sql-driver.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';

/** Options every PostgreSQL integration takes (Kysely, Drizzle, Prisma): the native store's protocol. */
export type PgOrmOptions = PgTransactionOptions;

/** What one ORM supplies: its way to run a statement and a transaction, and to unwrap its errors. */
export interface PgOrm<Db, Tx> {
  /** A short name for logs and errors, e.g. `kysely:postgres`. */
  readonly engine: string;
  /** The application's database handle (its transactions run Idem's statements). */
  readonly db: Db;
  /**
   * Runs `text` (with `$1`... placeholders) on the database or in the transaction. `want`: whether
   * the caller reads the rows (`all`) or the number of rows changed (`run`); an ORM whose raw API
   * has one call for each (Prisma) picks by it, others may return both.
   */
  query(
    on: Db | Tx,
    text: string,
    params: readonly SqlValue[],
    want: 'rows' | 'count',
  ): Promise<{ rows: unknown[]; rowCount: number }>;
  /** One ORM transaction: BEGIN, `body`, COMMIT when it resolves, ROLLBACK when it throws. */
  transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * The node-postgres-shaped error (`code` a SQLSTATE, or a socket error) under the ORM's wrapper,
   * or undefined when `error` is not a database error (the application's own, passed on unchanged).
   */
  driverError(error: unknown): unknown;
}

/**
 * A SqlDriver over an ORM on PostgreSQL, written once for all of them: each transaction sets its
 * `lock_timeout` and takes the identity's advisory lock in its first statement, re-runs after a
 * serialization failure or deadlock, and reports a connection lost after the body returned (during
 * COMMIT) as `outcome_unknown`.
 */
export function pgOrmDriver<Db, Tx>(
  orm: PgOrm<Db, Tx>,
  dialect: SqlDialect,
  options: PgOrmOptions = {},
): SqlDriver<Tx> {
  const protocol = pgTransactionProtocol(options);
  const lockTimeout = String(protocol.lockTimeoutMs);
  const connection = (on: Db | Tx): SqlConnection => ({
    all: async <Row>(statement: SqlStatement, params: readonly SqlValue[]) =>
      (await orm.query(on, statement.text, params, 'rows')).rows as Row[],
    run: async (statement: SqlStatement, params: readonly SqlValue[]) =>
      (await orm.query(on, statement.text, params, 'count')).rowCount,
  });
  /** The driver's error behind what the ORM threw; undefined for an IdemError or the application's own. */
  const driverError = (error: unknown): unknown => (isIdemError(error) ? undefined : orm.driverError(error));

  return {
    dialect,
    capabilities: {
      engine: orm.engine,
      synchronous: false,
      optimisticInsert: dialect.call.insertNew !== undefined,
      multiProcess: true,
      durable: true,
    },
    async read<T>(body: (conn: SqlConnection) => MaybePromise<T>, signal: SignalOption = {}): Promise<T> {
      signal.signal?.throwIfAborted();
      try {
        // A read takes ACCESS SHARE locks too (a LOCK TABLE or an ALTER TABLE makes it wait): it runs
        // in a transaction of its own whose first statement bounds that wait by lock_timeout.
        const running = orm.transaction(async (tx) => {
          await orm.query(tx, "SELECT set_config('lock_timeout', $1, true)", [lockTimeout], 'rows');
          return body(connection(tx));
        });
        // A read has no effect: an abort may leave it to finish unheard (e.g. waiting for a connection).
        return await abandonOnAbort(running, signal.signal);
      } catch (error) {
        throw translatePgFailure(error, driverError(error), false);
      }
    },
    async transaction<T>(
      body: (conn: SqlConnection, tx: Tx, contended: boolean) => MaybePromise<T>,
      txOptions: SqlTransactionOptions = {},
    ): Promise<T> {
      const { signal } = txOptions;
      const lock = pgIdentityLock(txOptions);
      return runPgTransaction(protocol, { driverError }, signal, async (attempt) => {
        let begun = false;
        const running = orm.transaction(async (tx) => {
          // Aborted while the ORM waited for a connection: nothing ran yet, so nothing will.
          signal?.throwIfAborted();
          begun = true;
          // One round trip: the transaction's lock bound and the identity's lock (the select
          // list is evaluated left to right, so the bound applies to the lock's own wait; the
          // void of pg_advisory_xact_lock is read as a boolean, which every ORM can decode).
          let contended = false;
          if (lock === undefined) {
            await orm.query(tx, "SELECT set_config('lock_timeout', $1, true)", [lockTimeout], 'rows');
          } else if (lock.tryLock) {
            const { rows } = await orm.query(
              tx,
              "SELECT set_config('lock_timeout', $1, true), pg_try_advisory_xact_lock($2::bigint) AS free",
              [lockTimeout, lock.key],
              'rows',
            );
            if ((rows[0] as { free?: unknown } | undefined)?.free !== true) {
              contended = true;
              await orm.query(
                tx,
                'SELECT pg_advisory_xact_lock($1::bigint) IS NOT NULL AS locked',
                [lock.key],
                'rows',
              );
            }
          } else {
            await orm.query(
              tx,
              "SELECT set_config('lock_timeout', $1, true), pg_advisory_xact_lock($2::bigint) IS NOT NULL AS locked",
              [lockTimeout, lock.key],
              'rows',
            );
          }
          const value = await body(connection(tx), tx, contended);
          // After the body returned, only COMMIT can fail: a lost connection leaves the outcome unknown.
          attempt.bodyReturned();
          return value;
        });
        // Until the first statement, an abort ends the wait; after it, the real outcome counts.
        return abandonOnAbort(running, signal, { abandonable: () => !begun });
      });
    },
    // The database handle is the application's: closing it stays theirs.
    close: async () => undefined,
  };
}

/**
 * True when `error` looks like a node-postgres error or a socket error: a SQLSTATE, a connection
 * fault, or the pool's wait for a free connection timing out.
 */
export function isPgDriverError(error: unknown): boolean {
  return sqlState(error) !== undefined || isConnectionLoss(error) || isPoolWaitTimeout(error);
}
