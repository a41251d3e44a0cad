import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type {
  SqlConnection,
  SqlDialect,
  SqlDriver,
  SqlStatement,
  SqlTransactionOptions,
  SqlValue,
} from '../../adapters/sql/sql-driver.js';
import type { MaybePromise } from '../../ports/maybe-async.js';
import { isPgDriverError, pgOrmDriver, type PgOrmOptions } from '../shared/pg-orm-driver.js';
import { isSqliteBusy } from '../../adapters/sqlite/sqlite-errors.js';
import { DEFAULT_SQLITE_LOCK_TIMEOUT_MS, LockWait, retryWhileBusy } from '../../adapters/sqlite/lock-wait.js';
import { WriteTurn } from '../../adapters/sqlite/write-turn.js';
import type { Clock } from '../../core/clock.js';
import { sqliteOrmDriver } from '../shared/sqlite-orm-driver.js';
import { sqliteDriverError, translateSqliteOrmError } from '../shared/sqlite-orm-errors.js';

/** Runs one of Idem's statements through Kysely, on the database or in a transaction. */
async function execute(on: Kysely<unknown>, text: string, params: readonly SqlValue[]) {
  const result = await on.executeQuery<unknown>(CompiledQuery.raw(text, [...params]));
  return { rows: result.rows as unknown[], rowCount: Number(result.numAffectedRows ?? 0) };
}

function connection(on: Kysely<unknown>): SqlConnection {
  return {
    all: async <Row>(statement: SqlStatement, params: readonly SqlValue[]) =>
      (await execute(on, statement.text, params)).rows as Row[],
    run: async (statement: SqlStatement, params: readonly SqlValue[]) =>
      (await execute(on, statement.text, params)).rowCount,
  };
}

/** Kysely on PostgreSQL (PostgresDialect): Kysely passes node-postgres errors through unwrapped. */
export function kyselyPostgresDriver<DB>(
  db: Kysely<DB>,
  dialect: SqlDialect,
  options: PgOrmOptions = {},
): SqlDriver<Transaction<DB>> {
  return pgOrmDriver<Kysely<DB>, Transaction<DB>>(
    {
      engine: 'kysely:postgres',
      db,
      query: (on, text, params) => execute(on as Kysely<unknown>, text, params),
      transaction: (body) => db.transaction().execute(body),
      driverError: (error) => (isPgDriverError(error) ? error : undefined),
    },
    dialect,
    options,
  );
}

/**
 * The first statement of each write transaction: Kysely's SqliteDialect issues a deferred BEGIN,
 * and a write that changes nothing takes SQLite's write lock at once (waiting in the database's
 * `busy_timeout`), as BEGIN IMMEDIATE would, so that the reads after it cannot meet
 * SQLITE_BUSY_SNAPSHOT when they upgrade. Before the first migration the table is not there yet;
 * the migration's own first write then takes the lock.
 */
const TAKE_WRITE_LOCK = CompiledQuery.raw('DELETE FROM idem_tombstones WHERE 0');

/** Options of the SQLite driver: how long a write transaction waits for the write lock. */
export interface KyselySqliteOptions {
  /** Beyond this wait for SQLite's write lock the call answers `busy`. Default 5000 ms. */
  lockTimeoutMs?: number;
  /** The clock the wait for the write lock is measured and paused on. Default the system clock. */
  clock?: Clock;
}

/**
 * Kysely on SQLite (SqliteDialect on better-sqlite3), one connection serialized by Kysely. The
 * wait for the write lock is asynchronous (kyselyStore sets the database's `busy_timeout` to 0):
 * better-sqlite3 would otherwise wait in its busy handler blocking the event loop, and with it a
 * transaction of this process that holds the lock on another connection. Transactions of this
 * process on other connections to the file are waited for in line (WriteTurn); another process's
 * lock is tried again by LockWait's schedule, on the clock, within `lockTimeoutMs`.
 */
export function kyselySqliteDriver<DB>(
  db: Kysely<DB>,
  dialect: SqlDialect,
  path?: string,
  options: KyselySqliteOptions = {},
  reader?: SqlConnection,
): SqlDriver<Transaction<DB>> {
  const on = db as unknown as Kysely<unknown>;
  const { clock } = options;
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_SQLITE_LOCK_TIMEOUT_MS;
  return sqliteOrmDriver<Transaction<DB>>(
    {
      engine: 'kysely:sqlite',
      synchronous: false,
      path,
      clock,
      // Committed data only: on a connection of its own where there is one (Kysely's one connection
      // may be inside a transaction, and waiting for Kysely's lock would deadlock a body that reads).
      reader: reader ?? connection(on),
      readBusyWaitMs: reader === undefined ? undefined : lockTimeoutMs,
      async transaction<T>(
        body: (conn: SqlConnection, tx: Transaction<DB>, contended: boolean) => MaybePromise<T>,
        txOptions: SqlTransactionOptions = {},
      ): Promise<T> {
        const { signal } = txOptions;
        const wait = new LockWait(lockTimeoutMs, clock);
        const turn = new WriteTurn(path);
        let locked = false;
        try {
          return await retryWhileBusy(
            () => {
              locked = false;
              return db.transaction().execute(async (tx) => {
                // In line behind this process's other writers on the file (Kysely serializes its own).
                await turn.take(wait, signal);
                await tx.executeQuery(TAKE_WRITE_LOCK).catch((error: unknown) => {
                  if (!/no such table/i.test(String((error as { message?: unknown } | null)?.message)))
                    throw error;
                });
                locked = true;
                // SQLite's write lock covers every identity: nobody else was in (contended is false).
                return body(connection(tx as unknown as Kysely<unknown>), tx, false);
              });
            },
            wait,
            // Not yet holding the lock, and another connection does: wait without blocking, bounded.
            { signal, busy: (error) => !locked && isSqliteBusy(sqliteDriverError(error)) },
          );
        } catch (error) {
          throw translateSqliteOrmError(error, path);
        } finally {
          turn.release();
        }
      },
    },
    dialect,
  );
}
