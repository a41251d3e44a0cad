import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe } from 'vitest';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { integrationSpec } from '../helpers/integration-spec.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// The two integrations without an ORM: the application's own better-sqlite3 Database and its own
// node-postgres Pool; the effect receives the Database, or the transaction's PoolClient.
describe('better-sqlite3: the application Database', () => {
  integrationSpec(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-own-sqlite-'));
    const db = new Database(path.join(dir, 'app.sqlite'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE invoices (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, amount_cents INTEGER)');
    const store = new SqliteStore(db);
    const count = (table: string) => async () =>
      (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return {
      store,
      insertInvoice: (tx, id, workspace, cents) => {
        tx.prepare('INSERT INTO invoices (id, workspace, amount_cents) VALUES (?, ?, ?)').run(
          id,
          workspace,
          cents,
        );
      },
      countInvoices: count('invoices'),
      countReceipts: count('idem_operations'),
      close: async () => {
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});

describe.skipIf(!postgresAvailable)('node-postgres: the application Pool', () => {
  integrationSpec(async () => {
    const schema = `own_pool_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const pool = new pg.Pool({
      connectionString: POSTGRES_URL,
      options: `-c search_path=${schema}`,
      max: 10,
    });
    await pool.query(
      'CREATE TABLE invoices (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, amount_cents INTEGER)',
    );
    const store = await PostgresStore.create(pool);
    const count = (table: string) => async () =>
      Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n);
    return {
      store,
      insertInvoice: async (client, id, workspace, cents) => {
        await client.query('INSERT INTO invoices (id, workspace, amount_cents) VALUES ($1, $2, $3)', [
          id,
          workspace,
          cents,
        ]);
      },
      countInvoices: count('invoices'),
      countReceipts: count('idem_operations'),
      close: async () => {
        await pool.query(`DROP SCHEMA ${schema} CASCADE`);
        await pool.end();
      },
    };
  });
});
