export { drizzleStore, type DrizzleStoreOptions } from './drizzle-store.js';
export {
  drizzlePostgresDriver,
  drizzleSqliteDriver,
  drizzleSql,
  type DrizzlePgTransaction,
  type DrizzleSqliteTransaction,
} from './drizzle-driver.js';
