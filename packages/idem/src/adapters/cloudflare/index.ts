export {
  DurableObjectStore,
  DURABLE_OBJECT_CAPABILITIES,
  migrateDurableObject,
  type DurableObjectStoreOptions,
} from './durable-object-store.js';
export type {
  DurableObjectSql,
  DurableObjectSqlCursor,
  DurableObjectSqlStorage,
} from './durable-object-sql.js';
