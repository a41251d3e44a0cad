// A stdio MCP server written with the library, for test/e2e/version-bump.test.ts: `create_ticket`
// at the version the environment names, on SQLite or PostgreSQL, so that a test can restart it at
// the next version on the same database. Plain JavaScript on the compiled library (dist/), because
// child processes cannot load TypeScript.
//
// Environment: TICKET_VERSION (default 1), TICKET_REPLAYS (comma-separated older versions, optional),
// and either TICKETS_DB (a SQLite file) or TICKETS_PG_URL with TICKETS_PG_SCHEMA.
import { randomUUID } from 'node:crypto';
import process from 'node:process';
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { Executor } from 'idem';
import { attachAuthInfo, principalAuthInfo, registerIdempotentTool } from 'idem/mcp';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { openPostgres, PostgresStore } from 'idem/postgres';

const version = Number(process.env.TICKET_VERSION ?? '1');
const replays = (process.env.TICKET_REPLAYS ?? '')
  .split(',')
  .filter((v) => v !== '')
  .map(Number);

let store;
let effect;
if (process.env.TICKETS_PG_URL !== undefined) {
  const pool = await openPostgres(process.env.TICKETS_PG_URL, {
    schema: process.env.TICKETS_PG_SCHEMA,
    max: 2,
  });
  await pool.query(
    'CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT, version INTEGER)',
  );
  store = await PostgresStore.create(pool);
  effect = async (client, args) => {
    const id = `t_${randomUUID()}`;
    await client.query('INSERT INTO tickets (id, workspace, title, version) VALUES ($1, $2, $3, $4)', [
      id,
      args.workspace,
      args.title,
      version,
    ]);
    return { resource_id: id, ticket_id: id, made_by: `v${version}` };
  };
} else {
  const db = openSqlite(process.env.TICKETS_DB ?? './tickets.sqlite');
  db.exec(
    'CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT, version INTEGER)',
  );
  const insert = db.prepare('INSERT INTO tickets (id, workspace, title, version) VALUES (?, ?, ?, ?)');
  store = new SqliteStore(db);
  effect = (_db, args) => {
    const id = `t_${randomUUID()}`;
    insert.run(id, args.workspace, args.title, version);
    return { resource_id: id, ticket_id: id, made_by: `v${version}` };
  };
}

const executor = new Executor({ store, authorize: () => true });
const server = new McpServer({ name: 'tickets', version: `${version}.0.0` });
registerIdempotentTool(server, executor, {
  name: 'create_ticket',
  version,
  ...(replays.length === 0 ? {} : { replaysVersions: replays }),
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }),
  effect,
});

const transport = new StdioServerTransport();
await server.connect(transport);
attachAuthInfo(transport, principalAuthInfo('alice'));
