import type { SqlConnection, SqlStatement, SqlValue } from '../sql/sql-driver.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';

/**
 * Idem's statements on one better-sqlite3 connection. Named statements (a fixed set) are prepared
 * once and kept; unnamed ones (the sweep's batches, whose texts vary with their size) each time.
 */
export class SqliteConnection implements SqlConnection {
  readonly #db: SqliteDatabase;
  readonly #objects = new Map<string, SqliteStatement>();
  readonly #arrays = new Map<string, SqliteStatement>();

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  all<Row>(statement: SqlStatement, params: readonly SqlValue[]): Row[] {
    return this.#prepared(statement).all(...params) as Row[];
  }

  values(statement: SqlStatement, params: readonly SqlValue[]): unknown[][] {
    return this.#raw(statement).all(...params) as unknown[][];
  }

  /** better-sqlite3's `get` in raw mode: one step, no array of rows, no step to find there is no second. */
  firstValues(statement: SqlStatement, params: readonly SqlValue[]): unknown[] | undefined {
    return this.#raw(statement).get(...params) as unknown[] | undefined;
  }

  run(statement: SqlStatement, params: readonly SqlValue[]): number {
    return this.#prepared(statement).run(...params).changes;
  }

  #raw(statement: SqlStatement): SqliteStatement {
    let prepared = this.#arrays.get(statement.text);
    if (prepared === undefined) {
      prepared = this.#db.prepare(statement.text).raw(true);
      if (statement.name !== undefined) this.#arrays.set(statement.text, prepared);
    }
    return prepared;
  }

  #prepared(statement: SqlStatement): SqliteStatement {
    let prepared = this.#objects.get(statement.text);
    if (prepared === undefined) {
      prepared = this.#db.prepare(statement.text);
      if (statement.name !== undefined) this.#objects.set(statement.text, prepared);
    }
    return prepared;
  }
}
