import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import { DEFAULT_SQLITE_LOCK_TIMEOUT_MS } from '../../adapters/sqlite/lock-wait.js';
import { translatePgError } from '../../adapters/postgres/postgres-errors.js';
import { postgresDialect } from '../../adapters/postgres/postgres-dialect.js';
import { migrateSqliteAsync } from '../../adapters/sqlite/sqlite-schema.js';
import type { SqliteDatabase } from '../../adapters/sqlite/sqlite-database.js';
import { sqliteDialect } from '../../adapters/sqlite/sqlite-dialect.js';
import { SqliteConnection } from '../../adapters/sqlite/sqlite-connection.js';
import { openSqlite } from '../../adapters/sqlite/open-sqlite.js';
import { sqlStore } from '../../adapters/sql/sql-store.js';
import type { IdemStore } from '../../ports/idem-store.js';
import { migrateOn } from '../shared/migrate-on.js';
import type { OrmStoreOptions } from '../shared/orm-store-options.js';
import { isPgDriverError } from '../shared/pg-orm-driver.js';
import { kyselyPostgresDriver, kyselySqliteDriver } from './kysely-driver.js';

export type KyselyStoreOptions = OrmStoreOptions &
  (
    | { engine: 'postgres' }
    | {
        engine: 'sqlite';
        /**
         * The better-sqlite3 Database under the Kysely SqliteDialect: Idem's migration is
         * synchronous and runs on it directly (Kysely does not lend it), and errors name its file.
         */
        database: SqliteDatabase;
      }
  );

/**
 * An Idem store on the application's own Kysely instance (PostgresDialect on a pg Pool, or
 * SqliteDialect on better-sqlite3): an effect receives Kysely's `Transaction<DB>`, and Idem's
 * receipt is written in that same transaction. Closing the store leaves `db` open.
 */
export async function kyselyStore<DB>(
  db: Kysely<DB>,
  options: KyselyStoreOptions,
): Promise<IdemStore<Transaction<DB>>> {
  const clock = options.clock === undefined ? {} : { clock: options.clock };
  if (options.engine === 'sqlite') {
    // Waits for the write lock are the driver's, asynchronous: see kyselySqliteDriver.
    options.database.pragma('busy_timeout = 0');
    if (options.migrate ?? true) {
      await migrateSqliteAsync(
        options.database,
        options.lockTimeoutMs ?? DEFAULT_SQLITE_LOCK_TIMEOUT_MS,
        options.clock,
      );
    }
    // Idem's reads (and its single-statement writes outside a transaction) go through a second
    // connection to the file: Kysely's only connection may be inside a call's transaction.
    const file = options.database.name;
    const second = file === undefined || file === '' || file === ':memory:' ? undefined : openSqlite(file);
    second?.pragma('busy_timeout = 0');
    const driver = kyselySqliteDriver(
      db,
      sqliteDialect,
      file,
      options,
      second === undefined ? undefined : new SqliteConnection(second),
    );
    const store = sqlStore(driver, clock);
    return { ...store, close: async () => void second?.close() };
  }
  if (options.migrate ?? true) {
    try {
      await db.connection().execute((conn) =>
        migrateOn(async (text, values) => {
          const result = await conn.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, values));
          return { rows: [...result.rows], rowCount: Number(result.numAffectedRows ?? 0) };
        }),
      );
    } catch (error) {
      throw isPgDriverError(error) ? translatePgError(error) : error;
    }
  }
  return sqlStore(kyselyPostgresDriver(db, postgresDialect, options), clock);
}
