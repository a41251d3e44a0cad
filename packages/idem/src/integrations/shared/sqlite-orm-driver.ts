import type { Clock } from '../../core/clock.js';
import { isSqliteBusy } from '../../adapters/sqlite/sqlite-errors.js';
import { LockWait, retryWhileBusy } from '../../adapters/sqlite/lock-wait.js';
import type { SqlConnection, SqlDialect, SqlDriver } from '../../adapters/sql/sql-driver.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';
import { sqliteDriverError, translateSqliteOrmError } from './sqlite-orm-errors.js';

/** What one ORM on better-sqlite3 supplies (Kysely, Drizzle): its reads and its write transaction. */
export interface SqliteOrm<Tx> {
  /** A short name for logs and errors, e.g. `kysely:sqlite`. */
  readonly engine: string;
  /** Whether `transaction` runs its body synchronously (as Drizzle's better-sqlite3 one does). */
  readonly synchronous: boolean;
  /** The database file (better-sqlite3's `name`), named in errors. */
  readonly path: string | undefined;
  /**
   * The store's clock: a read's wait for a lock (`readBusyWaitMs`) is measured and paused on it.
   * Default (LockWait's) the system clock.
   */
  readonly clock?: Clock | undefined;
  /** The connection Idem's reads outside a transaction go through. */
  readonly reader: SqlConnection;
  /**
   * Set when `reader` meets another connection's lock as SQLITE_BUSY at once (`busy_timeout` 0):
   * a read then waits without blocking and tries again (LockWait), for up to this many ms. Absent: the
   * database waits in its own `busy_timeout`, and SQLITE_BUSY is the answer.
   */
  readonly readBusyWaitMs?: number | undefined;
  /** One write transaction holding SQLite's write lock, its errors already translated. */
  readonly transaction: SqlDriver<Tx>['transaction'];
}

/**
 * A SqlDriver over an ORM on SQLite, the part all of them share: one writer for everybody (the
 * sweep is paced), reads on committed data whose driver errors are translated, and the database
 * handle left to the application on close.
 */
export function sqliteOrmDriver<Tx>(orm: SqliteOrm<Tx>, dialect: SqlDialect): SqlDriver<Tx> {
  const { reader, readBusyWaitMs, path, clock } = orm;
  return {
    dialect,
    capabilities: {
      engine: orm.engine,
      synchronous: orm.synchronous,
      optimisticInsert: false,
      multiProcess: true,
      durable: true,
    },
    sweepPacing: { blocksWriters: true },
    async read<T>(body: (conn: SqlConnection) => MaybePromise<T>, signal: SignalOption = {}): Promise<T> {
      try {
        if (readBusyWaitMs === undefined) {
          signal.signal?.throwIfAborted();
          return await body(reader);
        }
        return await retryWhileBusy(() => body(reader), new LockWait(readBusyWaitMs, clock), {
          signal: signal.signal,
          busy: (error) => isSqliteBusy(sqliteDriverError(error)),
          gaveUp: (error) => error, // a read changes nothing: the driver's busy, translated below
        });
      } catch (error) {
        throw translateSqliteOrmError(error, path);
      }
    },
    transaction: orm.transaction,
    // The database handle is the application's: closing it stays theirs.
    close: async () => undefined,
  };
}
