import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import {
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  ensureBuilt,
  makeTempDir,
} from '../helpers/mcp-fixtures.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// A server written with the library (create_ticket), restarted at the next version on the same
// database: a key that version 1 executed never executes again under version 2.
const SERVER = fileURLToPath(new URL('../helpers/versioned-ticket-server.mjs', import.meta.url));

interface Database {
  readonly env: Record<string, string>;
  tickets(): Promise<{ id: string; version: number }[]>;
  drop(): Promise<void>;
}

const engines: { name: string; open(): Database }[] = [
  {
    name: 'sqlite',
    open() {
      const file = join(makeTempDir(), 'tickets.sqlite');
      return {
        env: { TICKETS_DB: file },
        async tickets() {
          const db = openSqlite(file, { readonly: true });
          try {
            return db.prepare('SELECT id, version FROM tickets ORDER BY version, id').all() as {
              id: string;
              version: number;
            }[];
          } finally {
            db.close();
          }
        },
        drop: async () => undefined,
      };
    },
  },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres',
          open(): Database {
            const schema = `idem_vb_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
            const query = async <Row>(sql: string): Promise<Row[]> => {
              const client = new pg.Client({ connectionString: POSTGRES_URL });
              await client.connect();
              try {
                return (await client.query(sql)).rows as Row[];
              } finally {
                await client.end();
              }
            };
            return {
              env: { TICKETS_PG_URL: POSTGRES_URL, TICKETS_PG_SCHEMA: schema },
              tickets: () =>
                query<{ id: string; version: number }>(
                  `SELECT id, version FROM ${schema}.tickets ORDER BY version, id`,
                ),
              drop: () => query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).then(() => undefined),
            };
          },
        },
      ]
    : []),
];

const clients: Client[] = [];
const databases: Database[] = [];
beforeAll(ensureBuilt, 180_000);
afterEach(async () => {
  for (const client of clients.splice(0)) await closeQuietly(client);
  await cleanup();
});
afterAll(async () => {
  for (const db of databases.splice(0)) await db.drop();
});

/** Starts the server at `version` on `db` and connects to it over stdio. */
async function serve(db: Database, version: number, replays: readonly number[] = []): Promise<Client> {
  const client = new Client({ name: 'version-bump-test', version: '0.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER],
      cwd: REPO_ROOT,
      env: cleanEnv({
        ...db.env,
        TICKET_VERSION: String(version),
        ...(replays.length === 0 ? {} : { TICKET_REPLAYS: replays.join(',') }),
      }),
      stderr: 'inherit',
    }),
  );
  clients.push(client);
  return client;
}

/** Stops a server (its process ends when stdin closes). */
async function stop(client: Client): Promise<void> {
  clients.splice(clients.indexOf(client), 1);
  await closeQuietly(client);
}

describe.each(engines.map((e) => [e.name, e] as const))(
  'a version bump on the same database: %s',
  (_name, engine) => {
    it('never runs a key of version 1 again: refused without replaysVersions, replayed with it', async () => {
      const db = engine.open();
      databases.push(db);
      const key = randomUUID();
      const args = { idempotency_key: key, workspace: 'team-a', title: 'Printer on fire' };

      const v1 = await serve(db, 1);
      const first = await callTool(v1, 'create_ticket', args);
      expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false, made_by: 'v1' });
      const operationId = first.sc.operation_id;
      expect(operationId).toMatch(/^op_/);
      await stop(v1);

      // Version 2 does not answer for version 1's keys: refused, naming v1 and the operation.
      const v2 = await serve(db, 2);
      const refused = await callTool(v2, 'create_ticket', args);
      expect(refused.isError).toBe(true);
      expect(refused.sc).toMatchObject({
        status: 'rejected',
        operation_id: operationId,
        error: { code: 'version_conflict', retryable: false },
      });
      expect(refused.sc.error?.message).toContain('create_ticket@v1');
      expect(refused.sc.error?.message).toContain(String(operationId));
      expect(refused.sc.next_action).toBe(
        `Call get_operation with operation_id ${String(operationId)} to see what happened to the original action. For a new action, generate a new idempotency_key.`,
      );
      // Other arguments with the key: the same refusal.
      expect((await callTool(v2, 'create_ticket', { ...args, title: 'Other' })).sc.error?.code).toBe(
        'version_conflict',
      );
      expect(await db.tickets()).toHaveLength(1);
      await stop(v2);

      // Version 2 that still answers version 1's keys: the original result, replayed.
      const v2r = await serve(db, 2, [1]);
      const replay = await callTool(v2r, 'create_ticket', args);
      expect(replay.sc).toEqual({ ...first.sc, replayed: true });
      expect((await callTool(v2r, 'create_ticket', { ...args, title: 'Other' })).sc.error?.code).toBe(
        'payload_conflict',
      );
      expect(await db.tickets()).toEqual([{ id: first.sc.resource_id, version: 1 }]);

      // A new key executes under version 2, once.
      const fresh = { ...args, idempotency_key: randomUUID() };
      const second = await callTool(v2r, 'create_ticket', fresh);
      expect(second.sc).toMatchObject({ status: 'succeeded', replayed: false, made_by: 'v2' });
      expect((await callTool(v2r, 'create_ticket', fresh)).sc).toEqual({ ...second.sc, replayed: true });
      expect(await db.tickets()).toEqual([
        { id: first.sc.resource_id, version: 1 },
        { id: second.sc.resource_id, version: 2 },
      ]);
    }, 120_000);
  },
);
