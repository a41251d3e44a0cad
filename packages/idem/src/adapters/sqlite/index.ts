export { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
export { openSqlite, type OpenSqliteOptions, type SqliteDriverName } from './open-sqlite.js';
export {
  fromNodeSqlite,
  sqliteEngineOf,
  type FromNodeSqliteOptions,
  type NodeSqliteDatabaseSync,
  type NodeSqliteStatementSync,
} from './node-sqlite-database.js';
export { migrateSqlite, SQLITE_SCHEMA_VERSION } from './sqlite-schema.js';
export type { SqliteDatabase, SqliteStatement } from './sqlite-database.js';
export { sqliteDialect } from './sqlite-dialect.js';
export { SQLITE_CAPABILITIES } from './sqlite-engine.js';
export { translateSqliteError, isSqliteError } from './sqlite-errors.js';
