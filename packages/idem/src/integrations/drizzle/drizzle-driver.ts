import { sql, type SQL } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
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
import { sqliteOrmDriver } from '../shared/sqlite-orm-driver.js';
import { translateSqliteOrmError } from '../shared/sqlite-orm-errors.js';

/** The `tx` a Drizzle node-postgres transaction hands its callback. */
export type DrizzlePgTransaction<TSchema extends Record<string, unknown>> = Parameters<
  Parameters<NodePgDatabase<TSchema>['transaction']>[0]
>[0];

/** The `tx` a Drizzle better-sqlite3 transaction hands its (synchronous) callback. */
export type DrizzleSqliteTransaction<TSchema extends Record<string, unknown>> = Parameters<
  Parameters<BetterSQLite3Database<TSchema>['transaction']>[0]
>[0];

/**
 * One of Idem's statements as Drizzle `sql`: the text between placeholders raw, each placeholder a
 * bound parameter (`$n` on PostgreSQL, which Drizzle numbers again; `?` on SQLite, in order).
 */
export function drizzleSql(text: string, params: readonly SqlValue[], engine: 'postgres' | 'sqlite'): SQL {
  const pattern = engine === 'postgres' ? /\$(\d+)/g : /\?/g;
  const chunks: SQL[] = [];
  let last = 0;
  let next = 0;
  for (const match of text.matchAll(pattern)) {
    const index = engine === 'postgres' ? Number(match[1]) - 1 : next++;
    if (index < 0 || index >= params.length) throw new RangeError(`no parameter for ${match[0]}`);
    chunks.push(sql.raw(text.slice(last, match.index)), sql`${params[index]}`);
    last = match.index + match[0].length;
  }
  chunks.push(sql.raw(text.slice(last)));
  return sql.join(chunks);
}

/** The node-postgres error under Drizzle's DrizzleQueryError (or bare, from BEGIN and COMMIT). */
function pgCause(error: unknown): unknown {
  if (isPgDriverError(error)) return error;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return isPgDriverError(cause) ? cause : undefined;
}

interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

/** Drizzle on node-postgres: Idem's statements go through `tx.execute(sql)`. */
export function drizzlePostgresDriver<TSchema extends Record<string, unknown>>(
  db: NodePgDatabase<TSchema>,
  dialect: SqlDialect,
  options: PgOrmOptions = {},
): SqlDriver<DrizzlePgTransaction<TSchema>> {
  type Tx = DrizzlePgTransaction<TSchema>;
  return pgOrmDriver<NodePgDatabase<TSchema>, Tx>(
    {
      engine: 'drizzle:postgres',
      db,
      query: async (on, text, params) => {
        const result = (await on.execute(drizzleSql(text, params, 'postgres'))) as unknown as PgResult;
        return { rows: result.rows, rowCount: result.rowCount ?? 0 };
      },
      transaction: (body) => db.transaction(body),
      driverError: pgCause,
    },
    dialect,
    options,
  );
}

/** Drizzle on better-sqlite3: synchronous, so the effect (and Idem's statements) are too. */
export function drizzleSqliteDriver<TSchema extends Record<string, unknown>>(
  db: BetterSQLite3Database<TSchema>,
  dialect: SqlDialect,
  path?: string,
): SqlDriver<DrizzleSqliteTransaction<TSchema>> {
  type Tx = DrizzleSqliteTransaction<TSchema>;
  const connection = (on: BetterSQLite3Database<TSchema> | Tx): SqlConnection => ({
    all: <Row>(statement: SqlStatement, params: readonly SqlValue[]) =>
      on.all<Row>(drizzleSql(statement.text, params, 'sqlite')),
    run: (statement: SqlStatement, params: readonly SqlValue[]) =>
      on.run(drizzleSql(statement.text, params, 'sqlite')).changes,
  });
  return sqliteOrmDriver<Tx>(
    {
      engine: 'drizzle:sqlite',
      synchronous: true,
      path,
      // No readBusyWaitMs: better-sqlite3 waits for a lock in the database's own busy_timeout.
      reader: connection(db),
      async transaction<T>(
        body: (conn: SqlConnection, tx: Tx, contended: boolean) => MaybePromise<T>,
        options: SqlTransactionOptions = {},
      ): Promise<T> {
        options.signal?.throwIfAborted();
        try {
          // BEGIN IMMEDIATE: the write lock from the start, which covers every identity.
          return db.transaction((tx) => body(connection(tx), tx, false) as T, { behavior: 'immediate' });
        } catch (error) {
          throw translateSqliteOrmError(error, path);
        }
      },
    },
    dialect,
  );
}
