/**
 * The part of a Durable Object's SQLite storage (`ctx.storage`, a class bound with
 * `new_sqlite_classes`) that Idem uses, declared here so that the library needs no Cloudflare types.
 * `@cloudflare/workers-types`' `DurableObjectStorage` has these members.
 */
export interface DurableObjectSqlCursor {
  toArray(): Record<string, unknown>[];
  raw(): Iterator<unknown[]>;
}

/** `ctx.storage.sql`: statements on the object's own SQLite database. */
export interface DurableObjectSql {
  exec(query: string, ...bindings: unknown[]): DurableObjectSqlCursor;
}

/** `ctx.storage`: its SQL and its synchronous transactions. */
export interface DurableObjectSqlStorage {
  readonly sql: DurableObjectSql;
  transactionSync<T>(closure: () => T): T;
}
