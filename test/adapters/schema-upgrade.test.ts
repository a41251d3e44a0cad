import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import {
  migratePostgres,
  POSTGRES_SCHEMA_VERSION,
} from '../../packages/idem/src/adapters/postgres/postgres-schema.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import {
  migrateSqlite,
  SQLITE_SCHEMA_VERSION,
} from '../../packages/idem/src/adapters/sqlite/sqlite-schema.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { fingerprint } from '../../packages/idem/src/core/fingerprint.js';
import { deploymentFields } from '../../packages/idem-cli/src/server/deployment-handler.js';
import { resolveOperation } from '../../packages/idem/src/operations/operation-resolver.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { callStart, DEPLOYMENT_ARGS, durableExecutor } from '../helpers/store-fixtures.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

const DAY = 24 * 60 * 60 * 1000;
const OPERATION_ID = 'op_0000000000000000000000000000old1';

afterEach(removeTempFiles);

/** A statement and its values, written with `?` placeholders (PostgreSQL gets `$n`). */
type Row = readonly [sql: string, values: readonly unknown[]];

/** What an Idem of the previous schema version left behind: a failed deployment and three webhooks. */
function oldRows(now: number): Row[] {
  const columns =
    'operation_id, principal, workspace, operation, version, idem_key, fingerprint, kind, status, args_json, error_json, created_at, updated_at, expires_at, attempt_count';
  const outbox =
    'INSERT INTO idem_outbox (dedup_key, destination, payload_json, created_at, attempts, next_attempt_at, last_error, dispatched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
  return [
    [
      `INSERT INTO idem_operations (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        OPERATION_ID,
        'alice',
        'ws-1',
        'start_deployment',
        1,
        'deploy-old',
        fingerprint(DEPLOYMENT_ARGS),
        'durable',
        'failed',
        JSON.stringify(DEPLOYMENT_ARGS),
        JSON.stringify({ code: 'internal', message: 'deadline exhausted after 3 attempts: timeout' }),
        now - DAY / 2,
        now - DAY / 2,
        now + DAY,
        3,
      ],
    ],
    [outbox, ['pending-1', 'http://127.0.0.1:9/webhooks', '{"n":1}', now, 4, now, 'http_503', null]],
    [
      outbox,
      ['delivered-1', 'http://127.0.0.1:9/webhooks', '{"n":2}', now - 2 * DAY, 1, now, null, now - 2 * DAY],
    ],
    [outbox, ['delivered-2', 'http://127.0.0.1:9/webhooks', '{"n":3}', now, 1, now, null, now]],
  ];
}

interface Opened {
  readonly store: IdemStore<unknown>;
  version(): Promise<number>;
  /** The primary key's columns of `table`, in order, and the names of its other indexes. */
  keys(table: string): Promise<{ primaryKey: string[]; indexes: string[] }>;
  close(): Promise<void>;
}

interface OldDatabase {
  readonly name: string;
  /**
   * Builds a database at the previous schema version (or `back` versions before the latest) with
   * `oldRows` and the statements of `before`, then opens today's store on it.
   */
  open(clock: FakeClock, before?: string, back?: number): Promise<Opened>;
}

const engines: OldDatabase[] = [
  {
    name: 'sqlite',
    async open(clock, before, back = 1) {
      const file = tempFile();
      const old = openSqlite(file);
      expect(migrateSqlite(old, SQLITE_SCHEMA_VERSION - back)).toBe(SQLITE_SCHEMA_VERSION - back);
      for (const [sql, values] of oldRows(clock.now())) old.prepare(sql).run(...values);
      if (before !== undefined) old.exec(before);
      old.close();
      const db = openSqlite(file);
      const store = new SqliteStore(db, { clock });
      return {
        store,
        version: async () => Number(db.pragma('user_version', { simple: true })),
        keys: async (table) => {
          const columns = db.prepare(`SELECT name, pk FROM pragma_table_info('${table}')`).all() as {
            name: string;
            pk: number;
          }[];
          const indexes = db.prepare(`SELECT name, origin FROM pragma_index_list('${table}')`).all() as {
            name: string;
            origin: string;
          }[];
          return {
            primaryKey: columns
              .filter((c) => c.pk > 0)
              .sort((a, b) => a.pk - b.pk)
              .map((c) => c.name),
            indexes: indexes.filter((i) => i.origin === 'c').map((i) => i.name),
          };
        },
        close: () => store.close(),
      };
    },
  },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres',
          async open(clock: FakeClock, before?: string, back = 1): Promise<Opened> {
            const schema = `idem_up_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
            const pool = await openPostgres(POSTGRES_URL, { schema, max: 2 });
            expect(await migratePostgres(pool, POSTGRES_SCHEMA_VERSION - back)).toBe(
              POSTGRES_SCHEMA_VERSION - back,
            );
            for (const [sql, values] of oldRows(clock.now())) {
              let n = 0;
              await pool.query(
                sql.replace(/\?/g, () => `$${(n += 1)}`),
                [...values],
              );
            }
            if (before !== undefined) await pool.query(before);
            const store = await PostgresStore.create(pool, { clock });
            return {
              store,
              version: async () =>
                Number(
                  (await pool.query<{ v: number }>('SELECT max(version) AS v FROM idem_schema_migrations'))
                    .rows[0]?.v,
                ),
              keys: async (table: string) => {
                const pk = await pool.query<{ name: string }>(
                  `SELECT a.attname AS name FROM pg_index i
                     CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                   WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.n`,
                  [table],
                );
                const indexes = await pool.query<{ name: string }>(
                  `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                   WHERE i.indrelid = $1::regclass AND NOT i.indisprimary AND NOT i.indisunique`,
                  [table],
                );
                return {
                  primaryKey: pk.rows.map((r) => r.name),
                  indexes: indexes.rows.map((r) => r.name).sort(),
                };
              },
              close: async () => {
                await store.close();
                await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
                await pool.end();
              },
            };
          },
        },
      ]
    : []),
];

for (const engine of engines) {
  describe(`a database of the previous schema version: ${engine.name}`, () => {
    it('migrates on open and keeps working: records, correction, outbox, dead letters, sweep', async () => {
      const clock = new FakeClock();
      const opened = await engine.open(clock);
      onTestFinished(() => opened.close());
      const { store } = opened;
      expect(await opened.version()).toBe(
        engine.name === 'sqlite' ? SQLITE_SCHEMA_VERSION : POSTGRES_SCHEMA_VERSION,
      );

      const old = await store.ledger.get(OPERATION_ID);
      expect(old).toMatchObject({ status: 'failed', attemptCount: 3, args: DEPLOYMENT_ARGS });
      expect(old?.audit).toBeUndefined();
      const now = clock.now();
      const corrected = await resolveOperation(
        store.ledger,
        { start_deployment: { successFields: deploymentFields } },
        OPERATION_ID,
        {
          to: 'succeeded',
          correct: true,
          by: 'oncall',
          now,
          resourceId: 'dep_found',
          reason: 'found at the provider',
          expiresAt: now + DAY,
        },
      );
      expect(corrected?.audit).toEqual([
        expect.objectContaining({ action: 'correct', from: 'failed', to: 'succeeded', by: 'oncall' }),
      ]);
      const replay = await callStart(durableExecutor(store, { clock }), { key: 'deploy-old' });
      expect(replay.ok && replay.result).toEqual({
        status: 'succeeded',
        operation_id: OPERATION_ID,
        resource_id: 'dep_found',
        deployment_id: 'dep_found',
        service: 'api',
        version: '1.4.2',
      });

      const [pending, ...others] = await store.outbox.claim({
        workerId: 'd1',
        now,
        leaseMs: 1000,
        limit: 10,
      });
      expect(others).toEqual([]);
      expect(pending).toMatchObject({ dedupKey: 'pending-1', attempts: 5, lastError: 'http_503' });
      await store.outbox.settle(pending?.id ?? -1, 'd1', { kind: 'dead', at: now, error: 'http_500' });
      expect((await store.outbox.deadLetters()).map((m) => m.dedupKey)).toEqual(['pending-1']);
      expect(await store.outbox.requeue(pending?.id ?? -1, now)).toMatchObject({ attempts: 0 });

      const swept = await store.housekeeping.sweep({
        now,
        tombstoneTtlMs: DAY,
        batchSize: 10,
        outboxRetentionMs: DAY,
      });
      expect(swept.outboxDeleted).toBe(1);

      // Schema 8: the tool catalog and the console's sessions. An operation from before the
      // upgrade has no stored declaration: result fields are refused, nothing is written.
      const noFields = resolveOperation(store, {}, OPERATION_ID, {
        to: 'succeeded',
        correct: true,
        by: 'oncall',
        now,
        resourceId: 'dep_other',
        reason: 'x',
        fields: { service: 'web' },
        expiresAt: now + DAY,
      });
      await expect(noFields).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringContaining('are not known to this database'),
      });
      expect((await store.ledger.get(OPERATION_ID))?.resourceId).toBe('dep_found');
      await store.tools.declare({
        operation: 'start_deployment',
        version: 1,
        resultSchema: null,
        declaredAt: now,
      });
      expect(await store.tools.get('start_deployment', 1)).toMatchObject({ resultSchema: null });
      const session = {
        id: 'digest',
        principal: 'olivia',
        csrf: 'c',
        credential: 'jwt',
        createdAt: now,
        expiresAt: now + DAY,
      };
      await store.sessions.put(session);
      expect(await store.sessions.get('digest', now)).toEqual(session);
    });

    it('migrates to primary keys in key order, one index fewer, and keeps finding every version of a key', async () => {
      const clock = new FakeClock();
      const opened = await engine.open(
        clock,
        `INSERT INTO idem_tombstones (principal, workspace, operation, version, idem_key, fingerprint,
           receipt_expired_at, expires_at) VALUES ('alice', 'ws-1', 'start_deployment', 1, 'gone', 'f', 1, 9999999999999)`,
        // The schema before the key-ordered primary keys (SQLite's 5th migration, PostgreSQL's 4th).
        engine.name === 'sqlite' ? SQLITE_SCHEMA_VERSION - 4 : POSTGRES_SCHEMA_VERSION - 3,
      );
      onTestFinished(() => opened.close());
      const keyOrder = ['principal', 'workspace', 'operation', 'idem_key', 'version'];
      for (const table of ['idem_operations', 'idem_tombstones']) {
        const { primaryKey, indexes } = await opened.keys(table);
        expect(primaryKey).toEqual(keyOrder);
        expect(indexes).not.toContain(`${table}_key`);
        expect(indexes).toContain(`${table}_expires_at`);
      }
      const identity = { principal: 'alice', workspace: 'ws-1', operation: 'start_deployment' };
      const at2 = await opened.store.receipts.lookup({ ...identity, version: 2, key: 'deploy-old' });
      expect(at2?.kind === 'receipt' ? at2.receipt.operationId : at2?.kind).toBe(OPERATION_ID);
      const gone = await opened.store.receipts.lookup({ ...identity, version: 1, key: 'gone' });
      expect(gone?.kind).toBe('tombstone');
      // A call with the old key answers from its record (found through the new primary key).
      const again = await callStart(durableExecutor(opened.store, { clock }), { key: 'deploy-old' });
      // Its record failed: the call reports that record, and nothing new is written.
      expect(again.ok ? again.operationId : again.error.operationId).toBe(OPERATION_ID);
      expect((await opened.store.ledger.list()).length).toBe(1);
    });

    it('migrates a database that already has one of the new columns', async () => {
      const clock = new FakeClock();
      const column = engine.name === 'sqlite' ? 'INTEGER' : 'BIGINT';
      // The schema before the migration that added dead_at (SQLite's 3rd, PostgreSQL's 2nd).
      const back = engine.name === 'sqlite' ? SQLITE_SCHEMA_VERSION - 2 : POSTGRES_SCHEMA_VERSION - 1;
      const opened = await engine.open(clock, `ALTER TABLE idem_outbox ADD COLUMN dead_at ${column}`, back);
      onTestFinished(() => opened.close());
      expect(await opened.version()).toBe(
        engine.name === 'sqlite' ? SQLITE_SCHEMA_VERSION : POSTGRES_SCHEMA_VERSION,
      );
      expect(await opened.store.outbox.deadLetters()).toEqual([]);
      expect((await opened.store.ledger.get(OPERATION_ID))?.status).toBe('failed');
    });

    it('migrates a database that holds one key under two versions, and a call there never executes it again', async () => {
      const clock = new FakeClock();
      // What an Idem before the cross-version rule could leave: deploy-old executed at v1 and at v2.
      const v2Id = 'op_0000000000000000000000000000old2';
      const opened = await engine.open(
        clock,
        `INSERT INTO idem_operations (operation_id, principal, workspace, operation, version, idem_key,
           fingerprint, kind, status, result_json, created_at, updated_at, expires_at, attempt_count)
         SELECT '${v2Id}', principal, workspace, operation, 2, idem_key, fingerprint, kind, 'succeeded',
           '{"status":"succeeded","operation_id":"${v2Id}","resource_id":"dep_v2"}', created_at, updated_at,
           expires_at, 1
         FROM idem_operations WHERE operation_id = '${OPERATION_ID}'`,
      );
      onTestFinished(() => opened.close());
      const { store } = opened;
      expect(await opened.version()).toBe(
        engine.name === 'sqlite' ? SQLITE_SCHEMA_VERSION : POSTGRES_SCHEMA_VERSION,
      );
      const identity = {
        principal: 'alice',
        workspace: 'ws-1',
        operation: 'start_deployment',
        key: 'deploy-old',
      };
      const found = async (version: number) => {
        const existing = await store.receipts.lookup({ ...identity, version });
        return existing?.kind === 'receipt' ? existing.receipt.operationId : existing?.kind;
      };
      expect(await found(1)).toBe(OPERATION_ID);
      expect(await found(2)).toBe(v2Id);
      expect(await found(3)).toBe(OPERATION_ID);
      const v3 = { name: 'start_deployment', version: 3 };
      const refused = await callStart(durableExecutor(store, { clock }), { key: 'deploy-old' }, v3);
      expect(refused.ok ? undefined : refused.error.code).toBe('version_conflict');
      expect(refused.ok ? undefined : refused.error.message).toContain('start_deployment@v1');
      expect((await store.ledger.list()).length).toBe(2);
    });
  });
}
