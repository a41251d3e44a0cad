import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import type { PgClient, PgPool } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import type { LogFields, Logger } from '../../packages/idem/src/core/logger.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { PostgresReferenceApp } from '../../packages/idem-cli/src/server/postgres-reference-app.js';
import type { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { callTool, closeQuietly, connectInMemory } from '../helpers/mcp-fixtures.js';
import {
  POSTGRES_URL,
  openPostgresTestStore,
  pgNoteOperation,
  postgresAvailable,
} from '../helpers/postgres-fixtures.js';
import type { TestStore } from '../helpers/store-fixtures.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// PostgreSQL that cannot take the call, each produced for real: a server that stops listening
// (a proxy in front of the real one is closed), a connection cut inside a transaction, a database
// dropped under the store, and a server that accepts no writes. Every case answers `unavailable`,
// retryable exactly when the condition is transient, and leaves nothing half-written.

const NOTES_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS notes (note_id TEXT PRIMARY KEY, workspace TEXT, body TEXT)';
const server = new URL(POSTGRES_URL);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const request = (key: string) => ({ principal: 'p', workspace: 'w', key, args: { body: 'private words' } });

function capturingLogger(lines: LogFields[]): Logger {
  const push = (event: string, fields: LogFields = {}) => void lines.push({ event, ...fields });
  return { info: push, warn: push, error: (event, fields) => push(event, { level: 'error', ...fields }) };
}

/** Resolves once the pool has dropped every connection it held (they died with the server side). */
async function drained(pool: PgPool): Promise<void> {
  const counted = pool as unknown as pg.Pool;
  const deadline = Date.now() + 10_000;
  while (counted.totalCount > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(counted.totalCount).toBe(0);
}

async function adminCount(schema: string, table: string): Promise<number> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.${table}`);
    return Number(rows[0]?.n ?? -1);
  } finally {
    await client.end();
  }
}

/** A store in its own schema, reached through `proxy`. */
async function storeBehind(proxy: TcpProxy, lines: LogFields[]) {
  const schema = `idem_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const url = `postgres://${server.username}@127.0.0.1:${proxy.port}${server.pathname}`;
  const pool = await openPostgres(url, { schema, max: 2 });
  cleanups.push(async () => {
    await pool.end();
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  await pool.query(NOTES_TABLE_SQL);
  const store = await PostgresStore.create(pool, {});
  const executor = new Executor<PgClient>({ store, authorize: () => true, logger: capturingLogger(lines) });
  return { schema, pool, executor, at: `127.0.0.1:${proxy.port}` };
}

if (postgresAvailable) {
  describe('PostgreSQL unavailable', () => {
    it('a server that stops listening: unavailable, retryable, naming host:port (never busy); then the retry runs once', async () => {
      const proxy = new TcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
      await proxy.start();
      cleanups.push(() => proxy.stop());
      const lines: LogFields[] = [];
      const { schema, pool, executor, at } = await storeBehind(proxy, lines);
      const note = pgNoteOperation();
      expect((await executor.run(note, request('before'))).ok).toBe(true);

      await proxy.stop();
      await drained(pool);
      const refused = await executor.run(note, request('down'));
      if (refused.ok) throw new Error('a call succeeded with the server down');
      expect(refused.error).toMatchObject({
        code: 'unavailable',
        retryable: true,
        message: `PostgreSQL at ${at} refused the connection (ECONNREFUSED)`,
        cause: { driverCode: 'ECONNREFUSED', server: at },
      });
      expect(refused.error.retryAfterMs).toBeGreaterThan(0);
      expect(lines.find((l) => l.outcome === 'unavailable')).toMatchObject({
        level: 'error',
        driver_code: 'ECONNREFUSED',
        db_server: at,
      });
      expect(JSON.stringify(lines)).not.toContain('private words');
      expect(await adminCount(schema, 'notes')).toBe(1);
      expect(await adminCount(schema, 'idem_operations')).toBe(1);

      await proxy.start();
      expect(await executor.run(note, request('down'))).toMatchObject({ ok: true, replayed: false });
      expect(await executor.run(note, request('before'))).toMatchObject({ ok: true, replayed: true });
      expect(await adminCount(schema, 'notes')).toBe(2);
      expect(await adminCount(schema, 'idem_operations')).toBe(2);
    });

    it('over MCP, create_note and list_notes answer unavailable (retryable) while the server is down, then work', async () => {
      const proxy = new TcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
      await proxy.start();
      cleanups.push(() => proxy.stop());
      const schema = `idem_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
      const app = await PostgresReferenceApp.open({
        url: `postgres://${server.username}@127.0.0.1:${proxy.port}${server.pathname}`,
        pool: { schema, max: 2 },
        registry: TokenRegistry.fixed({ principal: 'dev', workspaces: ['default'] }),
      });
      cleanups.push(async () => {
        await app.close();
        const admin = new pg.Client({ connectionString: POSTGRES_URL });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      });
      const client = await connectInMemory(app as unknown as ReferenceApp, 'dev');
      cleanups.push(() => closeQuietly(client));
      const args = { idempotency_key: randomUUID(), workspace: 'default', body: 'private words' };

      await proxy.stop();
      const at = `127.0.0.1:${proxy.port}`;
      for (const [tool, toolArgs] of [
        ['create_note', args],
        ['list_notes', { workspace: 'default' }],
      ] as const) {
        const result = await callTool(client, tool, toolArgs);
        expect(result.isError, tool).toBe(true);
        expect(result.sc, tool).toMatchObject({
          status: 'rejected',
          error: { code: 'unavailable', retryable: true },
        });
        expect(result.sc.error?.message, tool).toMatch(new RegExp(`PostgreSQL at ${at} `));
        expect(result.sc.error?.retry_after_ms, tool).toBeGreaterThan(0);
      }

      await proxy.start();
      const created = await callTool(client, 'create_note', args);
      expect(created.sc).toMatchObject({ status: 'succeeded', replayed: false });
      const listed = await callTool(client, 'list_notes', { workspace: 'default' });
      expect(listed.sc.notes).toHaveLength(1);
    });

    it('a connection cut inside the transaction: unavailable, retryable, the effect rolled back; the retry runs once', async () => {
      const proxy = new TcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
      await proxy.start();
      cleanups.push(() => proxy.stop());
      const { schema, executor, at } = await storeBehind(proxy, []);
      let cut = true;
      // The note is inserted; then, before the receipt, the connection goes.
      const note = pgNoteOperation({
        afterInsert: () => {
          if (!cut) return;
          cut = false;
          proxy.cut();
        },
      });
      const lost = await executor.run(note, request('cut'));
      if (lost.ok) throw new Error('a call succeeded on a cut connection');
      expect(lost.error).toMatchObject({ code: 'unavailable', retryable: true, cause: { server: at } });
      expect(lost.error.message).toMatch(
        new RegExp(`^the connection to PostgreSQL at ${at} was lost \\(\\S+\\); nothing was committed$`),
      );
      expect(await adminCount(schema, 'notes')).toBe(0);
      expect(await adminCount(schema, 'idem_operations')).toBe(0);

      expect(await executor.run(note, request('cut'))).toMatchObject({ ok: true, replayed: false });
      expect(await adminCount(schema, 'notes')).toBe(1);
      expect(await adminCount(schema, 'idem_operations')).toBe(1);
    });

    it('a database dropped under the store: unavailable, not retryable, naming server and database', async () => {
      const name = `idem_gone_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      cleanups.push(() => admin.end());
      await admin.query(`CREATE DATABASE ${name}`);
      cleanups.push(() => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      const url = new URL(POSTGRES_URL);
      url.pathname = `/${name}`;
      const pool = await openPostgres(url.href, { max: 2 });
      cleanups.push(() => pool.end());
      await pool.query(NOTES_TABLE_SQL);
      const executor = new Executor<PgClient>({
        store: await PostgresStore.create(pool),
        authorize: () => true,
      });
      const note = pgNoteOperation();
      expect((await executor.run(note, request('before'))).ok).toBe(true);

      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await drained(pool);
      const gone = await executor.run(note, request('after'));
      if (gone.ok) throw new Error('a call succeeded on a dropped database');
      const at = `${url.hostname}:${url.port || 5432}`;
      expect(gone.error).toMatchObject({
        code: 'unavailable',
        retryable: false,
        message: `PostgreSQL at ${at} has no database "${name}" (3D000)`,
        cause: { driverCode: '3D000', server: at },
      });
      expect(gone.error.nextAction).toMatch(/^An operator must fix the storage/);
    });

    it('a server that accepts no writes (read-only transactions): unavailable, not retryable; replays still answer', async () => {
      const t: TestStore = await openPostgresTestStore();
      cleanups.push(() => t.close());
      expect((await t.executor.run(t.createNote, request('written'))).ok).toBe(true);
      const readOnly = new pg.Pool({
        connectionString: POSTGRES_URL,
        max: 2,
        options: `-c search_path=${t.path} -c default_transaction_read_only=on`,
      });
      cleanups.push(() => readOnly.end());
      const store = await PostgresStore.create(readOnly as unknown as PgPool, { migrate: false });
      const executor = new Executor<PgClient>({ store, authorize: () => true });
      const note = pgNoteOperation();

      const refused = await executor.run(note, request('new'));
      if (refused.ok) throw new Error('a write succeeded in a read-only transaction');
      const at = `${server.hostname}:${server.port || 5432}`;
      expect(refused.error).toMatchObject({
        code: 'unavailable',
        retryable: false,
        message: `PostgreSQL at ${at} accepts no writes: the transaction is read-only (25006); nothing was committed`,
        cause: { driverCode: '25006', server: at },
      });
      expect(await executor.run(note, request('written'))).toMatchObject({ ok: true, replayed: true });
      expect(await t.countNotes()).toBe(1);
      expect(await t.countReceipts()).toBe(1);
    });
  });
} else {
  describe('PostgreSQL unavailable', () => {
    it('is not run: PostgreSQL unreachable (see stderr)', () => expect(postgresAvailable).toBe(false));
  });
}
