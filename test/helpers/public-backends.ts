import { randomUUID } from 'node:crypto';
import type { IdemStore } from '../../packages/idem/src/index.js';
import { SqliteStore, openSqlite } from '../../packages/idem/src/adapters/sqlite/index.js';
import { PostgresStore, openPostgres } from '../../packages/idem/src/adapters/postgres/index.js';
import { POSTGRES_URL, postgresAvailable } from './postgres-fixtures.js';

/**
 * The stores a user's durable tool runs on, opened through the public adapters: an in-memory SQLite
 * database, and PostgreSQL in a fresh schema (dropped on close) when the test database is up.
 */
export interface Backend {
  readonly name: string;
  open(): Promise<{ store: IdemStore; close(): Promise<void> }>;
}

export const BACKENDS: Backend[] = [
  {
    name: 'sqlite',
    open: async () => {
      const store = new SqliteStore(openSqlite(':memory:'));
      return { store: store as never, close: async () => store.close() };
    },
  },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres',
          open: async () => {
            const schema = `idem_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
            const pool = await openPostgres(POSTGRES_URL, { schema, max: 4 });
            const store = await PostgresStore.create(pool);
            return {
              store: store as never,
              close: async () => {
                await store.close();
                await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
                await pool.end();
              },
            };
          },
        },
      ]
    : []),
];
