export { PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
export { openPostgres, type OpenPostgresOptions } from './open-postgres.js';
export { migratePostgres, POSTGRES_SCHEMA_VERSION } from './postgres-schema.js';
export { translatePgError, isConnectionLoss } from './postgres-errors.js';
export type { PgPool, PgClient, PgQueryResult } from './postgres-pool.js';
export { postgresDialect } from './postgres-dialect.js';
export { POSTGRES_CAPABILITIES, postgresDriver } from './postgres-store.js';
export { identityLockKey } from './call-statements.js';
