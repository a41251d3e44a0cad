import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { attachAuthInfo, principalAuthInfo, registerIdempotentTool } from 'idem/mcp';

const db = openSqlite(process.env.TICKETS_DB ?? './tickets.sqlite'); // WAL, synchronous=FULL
db.exec('CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
const insert = db.prepare('INSERT INTO tickets (id, workspace, title) VALUES (?, ?, ?)');

const grants: Record<string, string[]> = { alice: ['team-a'] }; // your own access rules
const executor = new Executor({
  store: new SqliteStore(db, { lockTimeoutMs: 5000 }),
  // Runs before every execution and every replay.
  authorize: (principal, workspace) => grants[principal]?.includes(workspace) ?? false,
});

const server = new McpServer({ name: 'tickets', version: '1.0.0' });
registerIdempotentTool(server, executor, {
  name: 'create_ticket',
  version: 1, // bump when the meaning of the arguments or the effect changes
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }), // Idem adds workspace and idempotency_key
  retentionMs: 24 * 60 * 60 * 1000,
  // Runs inside the store's transaction, synchronously on SQLite, with the same connection.
  effect: (_db, args) => {
    const id = `t_${crypto.randomUUID()}`;
    insert.run(id, args.workspace, args.title);
    return { resource_id: id, ticket_id: id };
  },
});

// Over stdio this process acts as one principal; over HTTP, your authentication sets it per request.
const transport = new StdioServerTransport();
await server.connect(transport);
attachAuthInfo(transport, principalAuthInfo(process.env.TICKETS_PRINCIPAL ?? 'alice'));
