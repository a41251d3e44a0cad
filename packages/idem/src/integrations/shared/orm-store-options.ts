import type { PgOrmOptions } from './pg-orm-driver.js';

/**
 * Options every ORM integration takes. `lockTimeoutMs` bounds each lock wait: PostgreSQL's
 * `lock_timeout`, and on SQLite the wait for the write lock (Kysely) or for the migration's.
 */
export interface OrmStoreOptions extends PgOrmOptions {
  /** Create or upgrade Idem's tables when the store is created. Default true. */
  migrate?: boolean;
}
