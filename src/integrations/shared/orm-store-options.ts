import type { PgOrmOptions } from './pg-orm-driver.js';

/** Options every ORM integration takes. */
export interface OrmStoreOptions extends PgOrmOptions {
  /** Create or upgrade Idem's tables when the store is created. Default true. */
  migrate?: boolean;
}
