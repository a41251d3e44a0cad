export { kyselyStore, type KyselyStoreOptions } from './kysely-store.js';
export { kyselyPostgresDriver, kyselySqliteDriver } from './kysely-driver.js';
