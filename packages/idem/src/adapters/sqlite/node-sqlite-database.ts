import type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';

/** The part of `node:sqlite`'s `StatementSync` that Idem uses (Node >= 22.16). */
export interface NodeSqliteStatementSync {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  setReturnArrays(enabled: boolean): void;
}

/** The part of `node:sqlite`'s `DatabaseSync` that Idem uses (Node >= 22.16). */
export interface NodeSqliteDatabaseSync {
  prepare(sql: string): NodeSqliteStatementSync;
  exec(sql: string): void;
  close(): void;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
}

export interface FromNodeSqliteOptions {
  /** The file the database was opened on (used to open a checkpointer beside it, and named in errors). */
  path?: string;
  /** Whether it was opened read-only. */
  readonly?: boolean;
}

/** The wrappers made by `fromNodeSqlite`, so that `sqliteEngineOf` can tell the engines apart. */
const wrapped = new WeakSet<object>();

class NodeSqliteStatement implements SqliteStatement {
  readonly #statement: NodeSqliteStatementSync;

  constructor(statement: NodeSqliteStatementSync) {
    this.#statement = statement;
  }

  run(...params: unknown[]): { changes: number } {
    return { changes: Number(this.#statement.run(...params).changes) };
  }

  get(...params: unknown[]): unknown {
    return this.#statement.get(...params);
  }

  all(...params: unknown[]): unknown[] {
    return this.#statement.all(...params);
  }

  raw(toggle = true): SqliteStatement {
    this.#statement.setReturnArrays(toggle);
    return this;
  }
}

class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: NodeSqliteDatabaseSync;
  readonly name: string | undefined;
  readonly readonly: boolean;

  constructor(db: NodeSqliteDatabaseSync, options: FromNodeSqliteOptions) {
    this.#db = db;
    this.name = options.path;
    this.readonly = options.readonly ?? false;
  }

  get inTransaction(): boolean {
    return this.#db.isTransaction;
  }

  get open(): boolean {
    return this.#db.isOpen;
  }

  prepare(sql: string): SqliteStatement {
    return new NodeSqliteStatement(this.#db.prepare(sql));
  }

  exec(sql: string): this {
    this.#db.exec(sql);
    return this;
  }

  /** better-sqlite3's `pragma()`, which node:sqlite lacks: `PRAGMA source`, its rows or first value. */
  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const statement = this.#db.prepare(`PRAGMA ${source}`);
    if (options.simple !== true) return statement.all();
    statement.setReturnArrays(true);
    const row = statement.get() as unknown[] | undefined;
    return row?.[0];
  }

  close(): this {
    this.#db.close();
    return this;
  }
}

/**
 * A `node:sqlite` `DatabaseSync` (Node >= 22.16) as the SqliteDatabase that SqliteStore runs on: the
 * same statements, transactions and group commit as on better-sqlite3, with no native addon to
 * install. An effect receives this object, whose `prepare(sql).run/get/all` and `exec` write in the
 * receipt's transaction. Prefer `openSqlite(path, { driver: 'node:sqlite' })`, which also sets WAL
 * mode and durability; wrap a database yourself only to open it with options of your own.
 */
export function fromNodeSqlite(
  db: NodeSqliteDatabaseSync,
  options: FromNodeSqliteOptions = {},
): SqliteDatabase {
  const database = new NodeSqliteDatabase(db, options);
  wrapped.add(database);
  return database;
}

/** Which engine a SqliteDatabase runs on: `node:sqlite` for one made by `fromNodeSqlite`, else `better-sqlite3`. */
export function sqliteEngineOf(db: SqliteDatabase): 'better-sqlite3' | 'node:sqlite' {
  return wrapped.has(db) ? 'node:sqlite' : 'better-sqlite3';
}
