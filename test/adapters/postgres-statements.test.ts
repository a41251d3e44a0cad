import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import type {
  PgClient,
  PgPool,
  PgQueryConfig,
} from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { identityLockKey } from '../../packages/idem/src/adapters/postgres/call-statements.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// The statements a call sends on PostgreSQL: named prepared statements (which ones, turning them
// off, a migration adding a column under a cached plan), and the lookup under the lock that a first
// execution skips unless another transaction holds the identity.

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
  return { pool, names, call, schema, store };
}

if (postgresAvailable) {
  describe("PostgresStore: a call's statements", () => {
    it('sends the lookup and the record insert as named statements by default', async () => {
      const { names, call } = await setUp();
      expect(await call('k1')).toBe(false);
      expect(await call('k1')).toBe(true);
      const named = names.filter((n) => n !== '');
      // First execution: the lookup, then (nothing found) the guarded insert; replay: the lookup.
      expect(named).toEqual(['idem_find_v4', 'idem_insert_new_v5', 'idem_find_v4']);
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

    it('reads the lookups of one turn in one statement, each answer what a lookup of its own reads', async () => {
      const { pool, names, call, store } = await setUp();
      expect(await call('k1')).toBe(false);
      expect(await call('k2')).toBe(false);
      await pool.query(
        `INSERT INTO idem_tombstones (principal, workspace, operation, version, idem_key, fingerprint, receipt_expired_at, expires_at)
         VALUES ('p', 'w', 'noop', 1, 'gone', 'f-gone', 1, 9999999999999)`,
      );
      const at = (key: string, version = 1) => ({
        principal: 'p',
        workspace: 'w',
        operation: 'noop',
        version,
        key,
      });
      // A record, another record, nothing, the key at another version, a tombstone, a repeat.
      const identities = [at('k1'), at('k2'), at('absent'), at('k1', 2), at('gone'), at('k2')];
      names.length = 0;
      const together = await Promise.all(identities.map((identity) => store.receipts.lookup(identity)));
      // (Outside a read-only transaction of its own when the pool's sessions do not bound lock waits.)
      const named = () => names.filter((n) => n !== '');
      expect(named()).toEqual(['idem_find_many_v1']);
      const alone = [];
      for (const identity of identities) alone.push(await store.receipts.lookup(identity));
      expect(named().slice(1)).toEqual(identities.map(() => 'idem_find_v4'));
      expect(together).toEqual(alone);
      expect(together.map((found) => found?.kind)).toEqual([
        'receipt',
        'receipt',
        undefined,
        'receipt',
        'tombstone',
        'receipt',
      ]);
      expect(together[3]?.kind === 'receipt' && together[3].receipt.identity.version).toBe(1);
    });

    it("looks each key up alone when one caller's key fails the statement, failing only that lookup", async () => {
      const { names, call, store } = await setUp();
      expect(await call('k1')).toBe(false);
      const at = (key: string) => ({ principal: 'p', workspace: 'w', operation: 'noop', version: 1, key });
      names.length = 0;
      const settled = await Promise.allSettled(
        [at('k1'), at('nul\u0000key'), at('absent')].map((identity) => store.receipts.lookup(identity)),
      );
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((settled[0] as PromiseFulfilledResult<{ kind: string }>).value.kind).toBe('receipt');
      expect((settled[2] as PromiseFulfilledResult<undefined>).value).toBeUndefined();
      expect(names.filter((n) => n !== '')).toEqual([
        'idem_find_many_v1',
        'idem_find_v4',
        'idem_find_v4',
        'idem_find_v4',
      ]);
    });

    it('looks under the lock when another transaction holds the identity, then executes once', async () => {
      const { names, call, schema } = await setUp();
      const side = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await side.connect();
      cleanups.push(() => side.end());
      const identity = { principal: 'p', workspace: 'w', operation: 'noop', version: 1, key: 'held' };
      await side.query('BEGIN');
      await side.query(`SELECT pg_advisory_xact_lock(${identityLockKey(identity).toString()})`);
      let settled = false;
      const pending = call('held').finally(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(settled).toBe(false); // waiting for the lock, not past it
      await side.query('ROLLBACK');
      expect(await pending).toBe(false);
      // Contended: the lookup again under the lock and the upsert, not the guarded insert.
      expect(names.filter((n) => n !== '')).toEqual(['idem_find_v4', 'idem_find_v4', 'idem_upsert_v3']);
    });
  });
}
