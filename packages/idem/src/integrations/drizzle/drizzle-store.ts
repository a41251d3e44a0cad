import { is } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { translatePgError } from '../../adapters/postgres/postgres-errors.js';
import { postgresDialect } from '../../adapters/postgres/postgres-dialect.js';
import type { PgQueryResult } from '../../adapters/postgres/postgres-pool.js';
import { migrateSqliteWaiting } from '../../adapters/sqlite/sqlite-schema.js';
import { DEFAULT_SQLITE_LOCK_TIMEOUT_MS } from '../../adapters/sqlite/lock-wait.js';
import type { SqliteDatabase } from '../../adapters/sqlite/sqlite-database.js';
import { sqliteDialect } from '../../adapters/sqlite/sqlite-dialect.js';
import { sqlStore } from '../../adapters/sql/sql-store.js';
import type { IdemStore } from '../../ports/idem-store.js';
import { migrateOn } from '../shared/migrate-on.js';
import type { OrmStoreOptions } from '../shared/orm-store-options.js';
import { isPgDriverError } from '../shared/pg-orm-driver.js';
import {
  drizzlePostgresDriver,
  drizzleSqliteDriver,
  type DrizzlePgTransaction,
  type DrizzleSqliteTransaction,
} from './drizzle-driver.js';

export type DrizzleStoreOptions = OrmStoreOptions;

/** What node-postgres Drizzle holds in `$client`: a Pool (or a Client / PoolClient). */
interface PgClientLike {
  connect?(): Promise<{
    query(text: string, values: unknown[]): Promise<PgQueryResult>;
    release(): void;
  }>;
  query(text: string, values: unknown[]): Promise<PgQueryResult>;
}

/**
 * An Idem store on the application's own Drizzle database, from `drizzle(pool)` of
 * `drizzle-orm/node-postgres` or `drizzle(database)` of `drizzle-orm/better-sqlite3`: an effect
 * receives Drizzle's `tx`, and Idem's receipt is written in that same transaction. On
 * better-sqlite3 the transaction is synchronous (BEGIN IMMEDIATE): so must the effect be.
 * Idem's migration runs on `db.$client`. Closing the store leaves `db` open.
 */
export async function drizzleStore<TSchema extends Record<string, unknown>>(
  db: BetterSQLite3Database<TSchema> & { $client: SqliteDatabase },
  options?: DrizzleStoreOptions,
): Promise<IdemStore<DrizzleSqliteTransaction<TSchema>>>;
export async function drizzleStore<TSchema extends Record<string, unknown>>(
  db: NodePgDatabase<TSchema> & { $client: unknown },
  options?: DrizzleStoreOptions,
): Promise<IdemStore<DrizzlePgTransaction<TSchema>>>;
export async function drizzleStore<TSchema extends Record<string, unknown>>(
  db: (BetterSQLite3Database<TSchema> | NodePgDatabase<TSchema>) & { $client: unknown },
  options: DrizzleStoreOptions = {},
): Promise<IdemStore<DrizzleSqliteTransaction<TSchema>> | IdemStore<DrizzlePgTransaction<TSchema>>> {
  const clock = options.clock === undefined ? {} : { clock: options.clock };
  if (is(db, BaseSQLiteDatabase)) {
    const database = db.$client as SqliteDatabase;
    // Drizzle's database waits for a lock in its own busy_timeout; a wait that began there counts.
    if (options.migrate ?? true) {
      migrateSqliteWaiting(database, options.lockTimeoutMs ?? DEFAULT_SQLITE_LOCK_TIMEOUT_MS, options.clock);
    }
    return sqlStore(
      drizzleSqliteDriver(db as BetterSQLite3Database<TSchema>, sqliteDialect, database.name),
      clock,
    );
  }
  if (options.migrate ?? true) {
    const client = db.$client as PgClientLike;
    try {
      if (client.connect === undefined) {
        await migrateOn((text, values) => client.query(text, values));
      } else {
        // A pool: one of its connections, for the migration's session lock and transactions.
        const connection = await client.connect();
        try {
          await migrateOn((text, values) => connection.query(text, values));
        } finally {
          connection.release();
        }
      }
    } catch (error) {
      throw isPgDriverError(error) ? translatePgError(error) : error;
    }
  }
  return sqlStore(drizzlePostgresDriver(db as NodePgDatabase<TSchema>, postgresDialect, options), clock);
}
