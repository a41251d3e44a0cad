// The same tool on the MCP SDK 1.x line: only the imports change.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { attachAuthInfo, principalAuthInfo, registerIdempotentTool } from 'idem/mcp-v1';

const db = openSqlite(process.env.TICKETS_DB ?? './tickets.sqlite');
db.exec('CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
const insert = db.prepare('INSERT INTO tickets (id, workspace, title) VALUES (?, ?, ?)');

const grants: Record<string, string[]> = { alice: ['team-a'] };
const executor = new Executor({
  store: new SqliteStore(db),
  authorize: (principal, workspace) => grants[principal]?.includes(workspace) ?? false,
});

const server = new McpServer({ name: 'tickets', version: '1.0.0' });
registerIdempotentTool(server, executor, {
  name: 'create_ticket',
  version: 1,
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }),
  effect: (_db, args) => {
    const id = `t_${crypto.randomUUID()}`;
    insert.run(id, args.workspace, args.title);
    return { resource_id: id, ticket_id: id };
  },
});

const transport = new StdioServerTransport();
await server.connect(transport);
attachAuthInfo(transport, principalAuthInfo(process.env.TICKETS_PRINCIPAL ?? 'alice'));
