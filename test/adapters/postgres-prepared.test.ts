import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/adapters/postgres/open-postgres.js';
import type { PgClient, PgPool, PgQueryConfig } from '../../src/adapters/postgres/postgres-pool.js';
import { PostgresStore } from '../../src/adapters/postgres/postgres-store.js';
import { Executor } from '../../src/executor/executor.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// Named prepared statements on PostgreSQL: which statements use them, that turning them off works,
// and that a migration adding a column does not break a plan cached on a live connection.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Records the name (or '') of every statement sent through the pool's clients. */
function recording(pool: PgPool, names: string[]): PgPool {
  const note = (text: string | PgQueryConfig) =>
    names.push(typeof text === 'string' ? '' : (text.name ?? ''));
  const wrap = (client: PgClient): PgClient => ({
    query: (text, values) => (note(text), client.query(text, values)),
    release: (error) => client.release(error),
  });
  return {
    connect: async () => wrap(await pool.connect()),
    query: (text, values) => (note(text), pool.query(text, values)),
    end: () => pool.end(),
  };
}

async function setUp(preparedStatements?: boolean) {
  const schema = `idem_p_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  // One connection: every statement runs where the previous ones were prepared.
  const pool = await openPostgres(POSTGRES_URL, { schema, max: 1 });
  cleanups.push(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await pool.end();
  });
  const names: string[] = [];
  const store = await PostgresStore.create(
    recording(pool, names),
    preparedStatements === undefined ? {} : { preparedStatements },
  );
  cleanups.push(() => store.close());
  names.length = 0; // the migration's statements are not a call's
  const executor = new Executor<PgClient>({ store, authorize: () => true });
  const op = { name: 'noop', version: 1, effect: async () => ({ resource_id: 'r1' }) };
  /** Runs one call and says whether it was a replay; any failure fails the test. */
  const call = async (key: string): Promise<boolean> => {
    const outcome = await executor.run(op, { principal: 'p', workspace: 'w', key, args: { a: 1 } });
    if (!outcome.ok) throw outcome.error;
    return outcome.replayed;
  };
  return { pool, names, call };
}

if (postgresAvailable) {
  describe('PostgresStore prepared statements', () => {
    it('sends the lookup and the receipt upsert as named statements by default', async () => {
      const { names, call } = await setUp();
      expect(await call('k1')).toBe(false);
      expect(await call('k1')).toBe(true);
      const named = names.filter((n) => n !== '');
      // First execution: lookup, lookup under the lock, upsert; replay: lookup.
      expect(named).toEqual(['idem_find_v1', 'idem_find_v1', 'idem_upsert_v1', 'idem_find_v1']);
    });

    it('names none with preparedStatements: false, and keeps the contract', async () => {
      const { names, call } = await setUp(false);
      expect(await call('k1')).toBe(false);
      expect(await call('k1')).toBe(true);
      expect(names.filter((n) => n !== '')).toEqual([]);
      expect(names.length).toBeGreaterThan(4);
    });

    it('keeps replaying on a connection that prepared its statements before a column was added', async () => {
      const { pool, call } = await setUp();
      expect(await call('k1')).toBe(false);
      await pool.query('ALTER TABLE idem_operations ADD COLUMN added_later TEXT');
      expect(await call('k1')).toBe(true);
      expect(await call('k2')).toBe(false);
    });
  });
}
