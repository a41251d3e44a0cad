import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sharedSql } from '../../packages/idem/src/adapters/sql/shared-sql.js';
import { listFilters } from '../../packages/idem/src/adapters/sql/sql-ledger.js';
import { sqliteDialect } from '../../packages/idem/src/adapters/sqlite/sqlite-dialect.js';
import { postgresDialect } from '../../packages/idem/src/adapters/postgres/postgres-dialect.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

// The console's needs-a-person and open-state lists are served by the partial index on the open
// states (idem_operations_open), on both engines: the statement the ledger sends inlines the state.

afterAll(cleanup);

const OPEN = ['outcome_unknown', 'running', 'accepted', 'cancel_requested'] as const;

describe('the open-state lists use the partial index idem_operations_open', () => {
  it('SQLite: EXPLAIN QUERY PLAN names it, oldest and newest first, with a cursor', () => {
    const db = openSqlite(join(makeTempDir('idem-console-plan-'), 'plan.sqlite'));
    const store = new SqliteStore(db);
    try {
      const sql = sharedSql(sqliteDialect);
      for (const state of OPEN) {
        for (const order of ['oldest', 'newest'] as const) {
          const { where, params } = listFilters({
            status: state,
            order,
            after: 'op_',
          });
          const statement = sql.listWhere(where, order);
          const plan = db
            .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
            .all(...params, 100)
            .map((row) => (row as { detail: string }).detail)
            .join(' | ');
          expect(plan, `${state} ${order}`).toContain('idem_operations_open');
          expect(plan).not.toContain('TEMP B-TREE');
        }
      }
    } finally {
      void store.close();
    }
  });

  it.runIf(postgresAvailable)('PostgreSQL: EXPLAIN can use it for each open state', async () => {
    const schema = `idem_plan_${Math.random().toString(36).slice(2, 10)}`;
    const pool = await openPostgres(POSTGRES_URL, { schema, max: 1 });
    const store = await PostgresStore.create(pool);
    try {
      const sql = sharedSql(postgresDialect);
      const client = await pool.connect();
      try {
        await client.query('SET enable_seqscan = off');
        for (const state of OPEN) {
          const { where, params } = listFilters({ status: state, order: 'oldest' });
          const statement = sql.listWhere(where, 'oldest');
          const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, [
            ...params,
            100,
          ]);
          expect(rows.map((r) => r['QUERY PLAN']).join('\n'), state).toContain('idem_operations_open');
        }
      } finally {
        client.release();
      }
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      await pool.end();
    }
  });
});
