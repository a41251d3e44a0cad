import { systemClock, type Clock } from '../../core/clock.js';
import { IdemError, storageUnavailable } from '../../core/errors.js';
import type { StoreCapabilities } from '../../ports/idem-store.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';
import type { SqlConnection, SqlDriver, SqlTransactionOptions } from '../sql/sql-driver.js';
import { SqlStore } from '../sql/sql-store.js';
import type { SqliteDatabase, SqliteStatement } from '../sqlite/sqlite-database.js';
import { sqliteDialect } from '../sqlite/sqlite-dialect.js';
import { runSqliteMigrations, SQLITE_SCHEMA_VERSION } from '../sqlite/sqlite-schema.js';
import { DurableObjectConnection, isDurableObjectSqlError } from './durable-object-connection.js';
import type { DurableObjectSql, DurableObjectSqlStorage } from './durable-object-sql.js';

/**
 * What the Durable Object store declares: synchronous transactions, one instance of the object at a
 * time (so no other process shares its database), durable once a transaction returns.
 */
export const DURABLE_OBJECT_CAPABILITIES: StoreCapabilities = {
  engine: 'durable-object-sqlite',
  synchronous: true,
  optimisticInsert: false,
  multiProcess: false,
  durable: true,
};

/** How a DurableObjectStore is made beside its storage. */
export interface DurableObjectStoreOptions {
  clock?: Clock;
  /** Create or upgrade Idem's tables when the store is made (in one synchronous transaction). Default true. */
  migrate?: boolean;
}

/**
 * The store on a Cloudflare Durable Object's own SQLite database (`ctx.storage`, a class declared
 * with `new_sqlite_classes`): the shared SQL store and SQLite's statements, each write in
 * `ctx.storage.transactionSync`. An effect receives `ctx.storage.sql` and writes with
 * `sql.exec(...)` in that same transaction, so its rows and the receipt commit together or not at
 * all; it must be synchronous (no `await` inside). One object is one database: route each
 * workspace (or tenant) to its own object, e.g. `env.IDEM.idFromName(workspace)`.
 */
export class DurableObjectStore extends SqlStore<DurableObjectSql> {
  constructor(storage: DurableObjectSqlStorage, options: DurableObjectStoreOptions = {}) {
    if (options.migrate ?? true) migrateDurableObject(storage);
    super(durableObjectDriver(storage), { clock: options.clock ?? systemClock });
  }
}

/** Idem's schema version on this object's database (a table of its own: `PRAGMA user_version` is not allowed). */
export function migrateDurableObject(storage: DurableObjectSqlStorage): number {
  return storage.transactionSync(() => {
    const sql = storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS idem_schema (version INTEGER NOT NULL)');
    const row = sql.exec('SELECT version FROM idem_schema').toArray()[0];
    const from = Number(row?.version ?? 0);
    if (from >= SQLITE_SCHEMA_VERSION) return from;
    const version = runSqliteMigrations(migrationHandle(sql), from);
    if (row === undefined) sql.exec('INSERT INTO idem_schema (version) VALUES (?)', version);
    else sql.exec('UPDATE idem_schema SET version = ?', version);
    return version;
  });
}

/** The SqliteDatabase shape the shared migrations use, over `sql.exec`, inside transactionSync. */
function migrationHandle(sql: DurableObjectSql): SqliteDatabase {
  const statement = (text: string): SqliteStatement => ({
    run: (...params) => {
      sql.exec(text, ...params).toArray();
      return { changes: Number(sql.exec('SELECT changes() AS n').toArray()[0]?.n ?? 0) };
    },
    get: (...params) => sql.exec(text, ...params).toArray()[0],
    all: (...params) => sql.exec(text, ...params).toArray(),
    raw: () => {
      throw new IdemError('internal', 'raw statements are not used by migrations');
    },
  });
  return {
    prepare: statement,
    exec: (text: string) => sql.exec(text),
    pragma: () => {
      throw new IdemError('internal', 'PRAGMA is not allowed on Durable Object storage');
    },
    inTransaction: true,
    open: true,
    close: () => undefined,
  };
}

function durableObjectDriver(storage: DurableObjectSqlStorage): SqlDriver<DurableObjectSql> {
  const conn: SqlConnection = new DurableObjectConnection(storage.sql);
  return {
    dialect: sqliteDialect,
    capabilities: DURABLE_OBJECT_CAPABILITIES,
    sweepPacing: { blocksWriters: true },
    async read<T>(body: (conn: SqlConnection) => MaybePromise<T>, options: SignalOption = {}): Promise<T> {
      options.signal?.throwIfAborted();
      try {
        return await body(conn);
      } catch (error) {
        throw translate(error);
      }
    },
    async transaction<T>(
      body: (conn: SqlConnection, tx: DurableObjectSql, contended: boolean) => MaybePromise<T>,
      options: SqlTransactionOptions = {},
    ): Promise<T> {
      options.signal?.throwIfAborted();
      try {
        return storage.transactionSync(() => settledNow(body(conn, storage.sql, false)));
      } catch (error) {
        throw translate(error);
      }
    },
    close: async () => undefined,
  };
}

/** A body's answer, now: a promise is refused (its statements would run after the transaction). */
function settledNow<T>(value: MaybePromise<T>): T {
  if (value instanceof Promise) {
    value.catch(() => undefined);
    throw new IdemError(
      'internal',
      'an effect on a Durable Object store must be synchronous: it runs inside transactionSync',
    );
  }
  return value;
}

/** The object's SQL errors into Idem's set; what the body threw of its own comes out unchanged. */
function translate(error: unknown): unknown {
  if (!isDurableObjectSqlError(error)) return error;
  const message = String((error as Error).message);
  if (/SQLITE_FULL|database or disk is full/i.test(message)) {
    return storageUnavailable(`the Durable Object's storage is full; nothing was committed`, {
      retryable: false,
      cause: { driverCode: 'SQLITE_FULL' },
    });
  }
  return new IdemError('internal', 'database error; the transaction was rolled back', { cause: error });
}
