import type { SqlConnection, SqlStatement, SqlValue } from '../sql/sql-driver.js';
import type { DurableObjectSql } from './durable-object-sql.js';

/** Errors that came out of `sql.exec` (not out of an effect's own code). */
const driverErrors = new WeakSet<object>();

/** Whether `error` was raised by the object's SQL (see DurableObjectConnection). */
export function isDurableObjectSqlError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && driverErrors.has(error);
}

/** Idem's statements on a Durable Object's `ctx.storage.sql`; its errors are marked as the driver's. */
export class DurableObjectConnection implements SqlConnection {
  readonly #sql: DurableObjectSql;

  constructor(sql: DurableObjectSql) {
    this.#sql = sql;
  }

  all<Row>(statement: SqlStatement, params: readonly SqlValue[]): Row[] {
    return this.#exec(statement.text, params, (cursor) => cursor.toArray() as Row[]);
  }

  values(statement: SqlStatement, params: readonly SqlValue[]): unknown[][] {
    return this.#exec(statement.text, params, (cursor) => {
      const rows: unknown[][] = [];
      const iterator = cursor.raw();
      for (let next = iterator.next(); next.done !== true; next = iterator.next()) rows.push(next.value);
      return rows;
    });
  }

  firstValues(statement: SqlStatement, params: readonly SqlValue[]): unknown[] | undefined {
    return this.#exec(statement.text, params, (cursor) => {
      const next = cursor.raw().next();
      return next.done === true ? undefined : next.value;
    });
  }

  /** The rows the statement changed, by SQLite's `changes()` (the cursor's rowsWritten counts index writes too). */
  run(statement: SqlStatement, params: readonly SqlValue[]): number {
    return this.#exec(statement.text, params, (cursor) => {
      cursor.toArray();
      const row = this.#sql.exec('SELECT changes() AS n').toArray()[0];
      return Number(row?.n ?? 0);
    });
  }

  #exec<T>(
    text: string,
    params: readonly SqlValue[],
    read: (cursor: ReturnType<DurableObjectSql['exec']>) => T,
  ): T {
    try {
      return read(this.#sql.exec(text, ...params.map(bindable)));
    } catch (error) {
      if (typeof error === 'object' && error !== null) driverErrors.add(error);
      throw error;
    }
  }
}

/** Durable Object SQL binds strings, numbers, null and bytes: booleans as 1/0, bigints as numbers. */
function bindable(value: SqlValue): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') return Number(value);
  return value;
}
