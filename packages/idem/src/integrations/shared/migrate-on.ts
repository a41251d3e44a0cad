import { migratePostgres } from '../../adapters/postgres/postgres-schema.js';
import type { PgClient, PgPool, PgQueryResult } from '../../adapters/postgres/postgres-pool.js';

/** Runs one statement of the migration on the ORM's one connection (or transaction). */
export type MigrationQuery = (text: string, values: unknown[]) => Promise<PgQueryResult>;

/**
 * Idem's PostgreSQL migration (migratePostgres, which asks a pool for one connection) on the one
 * connection an ORM lends: `query` runs each statement there. `ownTransaction`: the connection is
 * already an ORM transaction that commits at the end, so the migration's own BEGIN, COMMIT and
 * ROLLBACK are not sent (a failure still rolls everything back, when the ORM does).
 */
export async function migrateOn(query: MigrationQuery, ownTransaction = false): Promise<number> {
  const client: PgClient = {
    query: async <Row>(text: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      const sql = typeof text === 'string' ? text : text.text;
      if (ownTransaction && /^\s*(BEGIN|COMMIT|ROLLBACK)\s*$/i.test(sql)) return { rows: [], rowCount: 0 };
      const result = await query(sql, (typeof text === 'string' ? values : text.values) ?? []);
      return result as PgQueryResult<Row>;
    },
    release: () => undefined,
  };
  const pool: PgPool = {
    connect: async () => client,
    query: (text, values) => client.query(text, values),
    end: async () => undefined,
  };
  return migratePostgres(pool);
}
