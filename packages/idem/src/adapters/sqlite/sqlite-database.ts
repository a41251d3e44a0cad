/**
 * The subset of better-sqlite3's `Database` that Idem uses (`fromNodeSqlite` gives node:sqlite the same
 * shape). Declared here so that the port and
 * the executor never depend on the driver; any object with these methods will do.
 */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** `true`: rows come back as arrays of values in column order instead of objects. */
  raw(toggle?: boolean): SqliteStatement;
}

export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  readonly inTransaction: boolean;
  readonly open: boolean;
  /** The file's path as opened (better-sqlite3 `name`); used to open a checkpointer beside it. */
  readonly name?: string;
  readonly readonly?: boolean;
  close(): unknown;
}
