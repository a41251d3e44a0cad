import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { POSTGRES_URL, openPostgresTestStore, postgresAvailable } from '../helpers/postgres-fixtures.js';
import type { TestStore } from '../helpers/store-fixtures.js';

// PostgreSQL-only failure paths of the store: a lock held past lock_timeout, and serialization
// failures, which the adapter re-runs itself.

const opened: TestStore[] = [];
const clients: pg.Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
  await Promise.all(opened.splice(0).map((t) => t.close()));
});

async function sideConnection(schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
  await client.connect();
  clients.push(client);
  return client;
}

const request = (key: string, body = 'b') => ({ principal: 'p', workspace: 'w', key, args: { body } });

if (postgresAvailable) {
  describe('postgres store faults', () => {
    it('answers busy (retryable, retry_after_ms) when a write lock is held past lock_timeout, and writes nothing', async () => {
      const t = await openPostgresTestStore({ lockTimeoutMs: 150 });
      opened.push(t);
      const holder = await sideConnection(t.path);
      await holder.query('BEGIN');
      // EXCLUSIVE lets readers in (replays, lookups) but makes every writer wait.
      await holder.query('LOCK TABLE idem_operations IN EXCLUSIVE MODE');

      const outcome = await t.executor.run(t.createNote, request('held'));
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.code).toBe('busy');
      expect(outcome.error.retryable).toBe(true);
      expect(outcome.error.retryAfterMs).toBeGreaterThan(0);
      expect(await t.countNotes()).toBe(0);
      expect(await t.countReceipts()).toBe(0);

      await holder.query('ROLLBACK');
      const retry = await t.executor.run(t.createNote, request('held'));
      expect(retry.ok).toBe(true);
      expect(await t.countNotes()).toBe(1);
    });

    it('re-runs a transaction that hit a serialization failure (40001) and commits it once', async () => {
      const t = await openPostgresTestStore();
      opened.push(t);
      const admin = await sideConnection(t.path);
      // A sequence is not transactional: the first insert into notes fails with 40001, later ones pass.
      await admin.query(`
        CREATE SEQUENCE fail_once;
        CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF nextval('fail_once') = 1 THEN
            RAISE EXCEPTION 'injected serialization failure' USING ERRCODE = '40001';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER fail_once BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION fail_once();
      `);
      const outcome = await t.executor.run(t.createNote, request('serial'));
      expect(outcome.ok).toBe(true);
      expect((await admin.query<{ v: string }>('SELECT last_value AS v FROM fail_once')).rows[0]?.v).toBe(
        '2',
      );
      expect(await t.countNotes()).toBe(1);
      expect(await t.countReceipts()).toBe(1);
    });

    it('gives up after the bounded re-runs with a retryable busy and commits nothing', async () => {
      const t = await openPostgresTestStore();
      opened.push(t);
      const admin = await sideConnection(t.path);
      await admin.query(`
        CREATE FUNCTION always_fail() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01'; END $$;
        CREATE TRIGGER always_fail BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION always_fail();
      `);
      const outcome = await t.executor.run(t.createNote, request('deadlock'));
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error).toMatchObject({ code: 'busy', retryable: true });
      expect(await t.countReceipts()).toBe(0);
    });
  });
} else {
  describe('postgres store faults', () => {
    it('is not run: PostgreSQL unreachable (see stderr)', () => expect(postgresAvailable).toBe(false));
  });
}
